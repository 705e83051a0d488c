import Foundation
import LatchkeyCore

/// What each user has consented to for each client, so the consent page is asked once.
public protocol ConsentStore: Sendable {
    func consent(userID: UserID, clientID: ClientID) async throws -> ConsentRecord?
    func saveConsent(_ consent: ConsentRecord) async throws
}
