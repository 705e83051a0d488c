import HummingbirdBcrypt
import LatchkeyServer

/// bcrypt password hashing (DESIGN §6).
public struct BcryptPasswordHasher: PasswordHasher {
    /// The bcrypt cost (work factor, 4–31). Each step doubles the time; 11 takes about 0.1 s here.
    public var cost: UInt8

    public init(cost: UInt8 = 11) {
        self.cost = cost
    }

    public func hash(_ password: String) throws -> String {
        Bcrypt.hash(password, cost: cost)
    }

    public func verify(_ password: String, hash: String) -> Bool {
        Bcrypt.verify(password, hash: hash)
    }
}
