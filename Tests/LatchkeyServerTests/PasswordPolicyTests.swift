import Foundation
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@Suite("Password policy")
struct PasswordPolicyTests {
    let policy = PasswordPolicy()

    func refusal(
        _ password: String, username: String? = "alice", email: String? = "alice.smith@example.com",
        policy: PasswordPolicy? = nil
    ) -> String? {
        do {
            try (policy ?? self.policy).check(password, username: username, email: email)
            return nil
        } catch let error as AdministrationError {
            #expect(error.field == "password")
            return error.description
        } catch {
            return "\(error)"
        }
    }

    @Test("Long enough, at most 72 bytes, at least 8 whatever the setting says")
    func length() {
        #expect(refusal("seven77")?.contains("at least 8") == true)
        #expect(refusal("battery-staple") == nil)
        #expect(refusal(String(repeating: "é", count: 37))?.contains("72 bytes") == true)
        #expect(PasswordPolicy(minimumLength: 4).minimumLength == 8)
        let twelve = PasswordPolicy(minimumLength: 12)
        #expect(refusal("battery-st", policy: twelve)?.contains("at least 12") == true)
        #expect(refusal("battery-staple", policy: twelve) == nil)
    }

    @Test("Not the account's username or e-mail address, in any case, with digits or punctuation after it")
    func ownName() {
        let policy = PasswordPolicy()
        for password in ["alice.smith@example.com", "ALICE.SMITH@EXAMPLE.COM", "alice.smith", "Alice.Smith2024!"] {
            #expect(refusal(password, username: "alice", policy: policy)?.contains("username or e-mail") == true, "\(password)")
        }
        #expect(refusal("alicewonder", username: "alicewonder")?.contains("username") == true)
        #expect(refusal("AliceWonder99", username: "alicewonder")?.contains("username") == true)
        #expect(refusal("alice-in-chains-1", username: "alice") == nil)
        #expect(refusal("alice-7391-8274-1938", username: "alice") == nil)  // more than a year or a PIN after it
    }

    @Test("Not one of the most used passwords, in any case")
    func common() {
        for password in ["password1", "Password1", "iloveyou", "qwerty123", "sunshine1", "12345678"] {
            #expect(refusal(password)?.contains("most used") == true, "\(password)")
        }
        #expect(refusal("correct-horse-battery") == nil)
        #expect(refusal("tr0ub4dor&3-x") == nil)
    }

    @Test("Creating a user and setting a password go through the server's policy")
    func administration() async throws {
        let fixture = try await Fixture.make { $0.passwordMinimumLength = 10 }
        let admin = fixture.server.administration
        await #expect(throws: AdministrationError.self) {
            try await admin.createUser(username: "carol", displayName: nil, password: "password123")
        }
        await #expect(throws: AdministrationError.self) {
            try await admin.createUser(username: "carol", displayName: nil, password: "short-pw")
        }
        _ = try await admin.createUser(
            username: "carol", displayName: nil, password: "battery-staple", email: "carol.ann@example.org")
        await #expect(throws: AdministrationError.self) {
            try await admin.setPassword(username: "carol", password: "Carol.Ann2025!")
        }
        try await admin.setPassword(username: "carol", password: "another-long-one")
    }
}
