import Foundation
import LatchkeyCore

extension Administration {
    /// Makes an initial access token (RFC 7591 §3) good for `lifetime` seconds. - Returns: the
    /// token, shown this once (the store keeps its hash), and its record.
    public func createInitialAccessToken(lifetime: TimeInterval) async throws -> (token: String, record: InitialAccessToken) {
        guard (60...(90 * 86_400)).contains(lifetime) else {
            throw AdministrationError("--lifetime must be from 60 seconds to 90 days.")
        }
        let token = RandomToken.generate(.initialAccessToken)
        let record = InitialAccessToken(
            id: RandomToken.alphanumeric(length: 8), tokenHash: RandomToken.hash(token), createdAt: now(),
            expiresAt: now().addingTimeInterval(lifetime))
        try await store.insertInitialAccessToken(record)
        await event(.registrationTokenCreated, ["token_id": "\(record.id)"])
        return (token, record)
    }

    /// Revokes an initial access token; apps it registered stay.
    public func deleteInitialAccessToken(id: String) async throws {
        guard try await store.deleteInitialAccessToken(id: id) else {
            throw AdministrationError("There is no initial access token \(id); latchkey registration-tokens list shows them.")
        }
        await event(.registrationTokenDeleted, ["token_id": "\(id)"])
    }
}
