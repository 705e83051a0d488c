import Foundation
import LatchkeyCore

/// The key sets of clients that authenticate with `private_key_jwt` (RFC 7523 §2.2), read once and
/// kept: a registered `jwks` by the hash of its text, a `jwks_uri` for what its `Cache-Control`
/// allows, between ``shortest`` and ``longest``. A `kid` the cached set lacks reads the URL again,
/// at most once per ``shortest``, so a client can rotate its keys without waiting, and forged
/// assertions naming made-up keys cannot make this server fetch in a loop. A fetch that failed is
/// remembered for ``shortest`` too.
public actor ClientKeySets {
    private struct Fetched {
        var keys: Result<AssertionKeySet, JWTAssertion.Rejection>
        var fetchedAt: Date
        var expiresAt: Date
    }

    private let fetcher: (any ClientMetadataFetching)?
    private var inline: [String: AssertionKeySet] = [:]
    private var fetched: [String: Fetched] = [:]
    /// The fewest seconds a fetched set (or a failed fetch) is kept.
    static let shortest: TimeInterval = 60
    /// The most seconds a fetched set is kept without reading it again.
    static let longest: TimeInterval = 3600
    /// How many sets of each kind are kept; past that the cache starts afresh.
    static let capacity = 1000

    public init(fetcher: (any ClientMetadataFetching)?) { self.fetcher = fetcher }

    /// The key set of `keys`. With `missing`, the `kid` an assertion names, a fetched set that
    /// lacks it is read again if it is older than ``shortest``.
    func keySet(_ keys: ClientKeys, missing kid: String?, now: Date) async -> Result<AssertionKeySet, JWTAssertion.Rejection> {
        switch keys {
        case .jwks(let json):
            let hash = RandomToken.hash(json)
            if let known = inline[hash] { return .success(known) }
            do throws(JWTAssertion.Rejection) {
                let set = try AssertionKeySet(json: Data(json.utf8))
                if inline.count >= Self.capacity { inline = [:] }
                inline[hash] = set
                return .success(set)
            } catch {
                return .failure(error)
            }
        case .jwksURI(let address):
            let known = fetched[address]
            if let known, now < known.expiresAt {
                let stale = now.timeIntervalSince(known.fetchedAt) >= Self.shortest
                guard stale, case .success(let set) = known.keys, set.lacks(kid: kid) else { return known.keys }
            }
            let result = await fetch(address)
            // A read for a new kid that fails keeps the set in hand until it expires: an assertion
            // naming a made-up kid, at a moment the client's server is down, must not take its
            // good keys away. It waits a minute before trying again all the same.
            if case .failure = result, let known, now < known.expiresAt, case .success = known.keys {
                fetched[address]?.fetchedAt = now
                return known.keys
            }
            var lifetime = Self.shortest
            if case .success(let (_, maxAge)) = result { lifetime = min(max(maxAge ?? 300, Self.shortest), Self.longest) }
            let keys = result.map(\.0)
            if fetched.count >= Self.capacity { fetched = [:] }
            fetched[address] = Fetched(keys: keys, fetchedAt: now, expiresAt: now.addingTimeInterval(lifetime))
            return keys
        }
    }

    private func fetch(_ address: String) async -> Result<(AssertionKeySet, TimeInterval?), JWTAssertion.Rejection> {
        guard let fetcher, let url = URL(string: address) else {
            return .failure(JWTAssertion.Rejection("This server does not fetch key sets; register jwks instead of jwks_uri."))
        }
        do {
            let document = try await fetcher.fetchKeySet(url)
            let set = try AssertionKeySet(json: Data(document.body))
            // no-store asks for no copy: kept the shortest time this server keeps one.
            return .success((set, document.noStore ? 0 : document.maxAge))
        } catch let refusal as FetchRefusal {
            return .failure(JWTAssertion.Rejection("The client's jwks_uri could not be read: \(refusal.description)."))
        } catch let rejection as JWTAssertion.Rejection {
            return .failure(JWTAssertion.Rejection("The client's jwks_uri: \(rejection.description)"))
        } catch {
            return .failure(JWTAssertion.Rejection("The client's jwks_uri could not be read."))
        }
    }
}
