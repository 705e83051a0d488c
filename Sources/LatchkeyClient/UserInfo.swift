import Foundation
import LatchkeyCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Who the access token's user is, from the provider's userinfo endpoint (OpenID Connect Core
/// §5.3; Latchkey's `/userinfo` answers the same shape with its own `username` and `user_id`).
public struct UserInfo: Sendable, Equatable, Decodable {
    /// `sub`: the user's stable identifier at the provider.
    public var subject: String?
    /// `name`: the display name.
    public var name: String?
    /// `preferred_username`, or Latchkey's `username`.
    public var username: String?

    enum CodingKeys: String, CodingKey {
        case subject = "sub"
        case name
        case preferredUsername = "preferred_username"
        case username
    }

    public init(subject: String?, name: String?, username: String?) {
        self.subject = subject
        self.name = name
        self.username = username
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        subject = try container.decodeIfPresent(String.self, forKey: .subject)
        name = try container.decodeIfPresent(String.self, forKey: .name)
        username =
            try container.decodeIfPresent(String.self, forKey: .preferredUsername)
            ?? container.decodeIfPresent(String.self, forKey: .username)
    }
}

extension AuthorizedClient {
    /// `GET` the provider's userinfo endpoint with the access token (refreshed when needed).
    /// - Throws: ``ClientError/invalidResponse(_:)`` when the provider has no userinfo endpoint or
    ///   answers something other than 200 with a JSON object.
    public func userInfo() async throws -> UserInfo {
        guard let endpoint = client.provider.userinfoEndpoint else {
            throw ClientError.invalidResponse("The provider publishes no userinfo endpoint.")
        }
        var request = URLRequest(url: endpoint)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let (data, response) = try await send(request)
        guard response.statusCode == 200 else {
            throw ClientError.invalidResponse("The userinfo endpoint answered HTTP \(response.statusCode).")
        }
        do {
            return try JSONDecoder().decode(UserInfo.self, from: data)
        } catch {
            throw ClientError.invalidResponse("The userinfo endpoint did not answer a JSON object.")
        }
    }
}
