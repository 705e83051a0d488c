import HummingbirdBcrypt
import LatchkeyServer

/// bcrypt password hashing (docs/design.md §6), run on ``PasswordWorkers`` so that a storm of
/// sign-ins never occupies the threads that serve token requests.
public struct BcryptPasswordHasher: PasswordHasher {
    /// The bcrypt cost (work factor, 4–31). Each step doubles the time; 11 takes about 0.1 s here.
    public var cost: UInt8
    /// Where the hashing runs.
    public var workers: PasswordWorkers

    public init(cost: UInt8 = 11, workers: PasswordWorkers = .shared) {
        self.cost = cost
        self.workers = workers
    }

    public func hash(_ password: String) async throws -> String {
        let cost = self.cost
        return try await workers.run { Bcrypt.hash(password, cost: cost) }
    }

    public func verify(_ password: String, hash: String) async throws -> Bool {
        try await workers.run { Bcrypt.verify(password, hash: hash) }
    }
}
