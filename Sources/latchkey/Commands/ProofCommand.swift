import ArgumentParser
import Foundation
import LatchkeyClient
import LatchkeyCore

/// `latchkey proof`: a DPoP proof (RFC 9449) for one request, made with the key of
/// `latchkey login --dpop`, for curl and other tools that cannot make one.
struct ProofCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proof",
        abstract: "Print a DPoP proof for one request, made with the key of latchkey login --dpop.",
        discussion: """
            Every proof works once. For a protected resource, pass the access token too (its hash goes
            in the proof as ath):

              curl -H "Authorization: DPoP $(latchkey token)" \\
                -H "DPoP: $(latchkey proof --method GET --url https://auth.example.com/userinfo --access-token "$(latchkey token)")" \\
                https://auth.example.com/userinfo
            """)

    @Option(help: "The request's method (htm).") var method = "GET"
    @Option(help: "The request's URL (htu; its query and fragment are left out).") var url: String
    @Option(name: .customLong("access-token"), help: "The access token sent with the request (ath).")
    var accessToken: String?
    @Option(help: "The nonce the server asked for in DPoP-Nonce.") var nonce: String?
    @Flag(help: "Print the key's thumbprint (jkt) instead of a proof.") var thumbprint = false

    func run() async throws {
        guard let target = URL(string: url), let scheme = target.scheme?.lowercased(), scheme == "https" || scheme == "http",
            target.host != nil
        else { throw fail("--url must be an absolute http(s) URL.") }
        let key = try DPoPKey.loadOrCreate(at: LoginRecord.dpopKeyURL)
        if thumbprint {
            print(key.thumbprint)
            return
        }
        await key.remember(nonce: nonce, for: target)
        print(try await key.proof(method: method.uppercased(), url: target, accessToken: accessToken))
    }
}
