import Foundation
import LatchkeyCore

/// A store failure. Callers answer `unavailable` with 503 `temporarily_unavailable`, never with a
/// credential error (docs/threat-model.md I5).
public enum StoreError: Error, Sendable, CustomStringConvertible {
    /// A uniqueness rule was broken (for example a username that exists).
    case conflict(String)
    /// The store could not be reached or failed; the operation did not happen.
    case unavailable(String)
    /// The store's schema is newer than this build knows.
    case schemaTooNew(String)

    public var description: String {
        switch self {
        case .conflict(let message), .unavailable(let message), .schemaTooNew(let message): message
        }
    }
}

extension String {
    /// Whether the string holds a NUL character. Stores answer "no such row" for such a key:
    /// SQLite's C API would cut it at the NUL (`web\0evil` would find `web`) and PostgreSQL
    /// refuses it in `text` (docs/threat-model.md T35).
    public var hasNUL: Bool { utf8.contains(0) }

    /// Whether the string can be a stored SHA-256 hash (64 characters, no NUL).
    var isUsableHash: Bool { utf8.count == 64 && !hasNUL }
}

/// Everything the server keeps: one protocol per concern, composed. Implementations (SQLite,
/// PostgreSQL) conform to all of them and pass one conformance suite; code that needs one concern
/// may ask for that protocol alone.
///
/// Each method is one atomic operation. Keys are typed (``StoreKey``). Both stores run the same
/// SQL, written once in `Store/SQL/` (``SQLDatabase``), where a key that cannot name a row (a NUL
/// character, an absurd length) is refused as it enters a statement (``SQLStatement``).
///
/// The next features add their concerns the same way: a protocol in `Store/Roles/` (signing keys,
/// registered resources, device codes, pushed requests…), added to this composition, with its
/// operations written once in `Store/SQL/` and its tests in the conformance suite.
public typealias Store = ScopeCatalogueStore & UserStore & ClientStore & SessionStore & ConsentStore & GrantStore
    & ThrottleStore & HousekeepingStore & AuditStore & SigningKeyStore & ResourceStore
    & RegistrationStore & PushedRequestStore & DeviceAuthorizationStore & DPoPStore & MailOutboxStore
    & AccountLinkStore & SecondFactorStore & PasskeyStore & FederationStore & AssertionStore & LogoutDeliveryStore
