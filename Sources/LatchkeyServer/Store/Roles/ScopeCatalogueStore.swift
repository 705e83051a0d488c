import Foundation
import LatchkeyCore

/// The scope catalogue: the scopes clients may ask for, with what the consent page says of each.
public protocol ScopeCatalogueStore: Sendable {
    func scopeCatalogue() async throws -> [ScopeDefinition]
    /// Adds the scope or replaces its description.
    func saveScope(_ scope: ScopeDefinition) async throws
    /// - Returns: whether the scope existed.
    func deleteScope(named name: String) async throws -> Bool
}
