import Foundation
import LatchkeyCore

/// The key sets of clients that authenticate with `private_key_jwt` (RFC 7523 §2.2), read once and
/// kept: a registered `jwks` by the hash of its text, a `jwks_uri` for what its `Cache-Control`
/// allows, between ``shortest`` and ``longest``.
///
/// A URL is read by one fetch at a time, whatever the number of requests waiting for it. A `kid`
/// the kept set lacks reads it again, at most once per ``shortest``, so a client can rotate its
/// keys without waiting, and forged assertions naming made-up keys cannot make this server fetch
/// in a loop. A read that fails keeps the last good set in use for up to ``longest`` past its
/// time (and tries again a minute later), so neither a client's server that is down for a while
/// nor fetches made to fail take a client's keys away; a URL never read successfully is refused
/// for a minute after each failure.
public actor ClientKeySets {
    private typealias Fetch = Result<(AssertionKeySet, TimeInterval?), JWTAssertion.Rejection>

    private struct Kept {
        /// The last set read, and until when it is good.
        var good: (keys: AssertionKeySet, until: Date)?
        /// The last failure, when the latest read failed.
        var failure: JWTAssertion.Rejection?
        /// When the URL was last read, successfully or not.
        var readAt: Date
    }

    private let fetcher: (any ClientMetadataFetching)?
    private var inline: [String: AssertionKeySet] = [:]
    private var kept: [String: Kept] = [:]
    private var reading: [String: Task<Fetch, Never>] = [:]
    /// The fewest seconds a fetched set is kept, and between two reads of a URL.
    static let shortest: TimeInterval = 60
    /// The most seconds a fetched set is kept without reading it again.
    static let longest: TimeInterval = 3600
    /// How many sets of each kind are kept; past that the cache starts afresh.
    static let capacity = 1000

    public init(fetcher: (any ClientMetadataFetching)?) { self.fetcher = fetcher }

    /// The key set of `keys`. With `missing`, the `kid` an assertion names, a fetched set that
    /// lacks it is read again if it was read more than ``shortest`` ago.
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
            if let answer = answer(address, missing: kid, now: now) { return answer }
            let fetched = await read(address)
            // Other requests may have stored a newer answer while this one waited: merge into
            // what is there now, never into what was there before the wait.
            var entry = kept[address] ?? Kept(good: nil, failure: nil, readAt: now)
            entry.readAt = now
            switch fetched {
            case .success(let (set, maxAge)):
                entry.good = (set, now.addingTimeInterval(min(max(maxAge ?? 300, Self.shortest), Self.longest)))
                entry.failure = nil
            case .failure(let problem):
                entry.failure = problem
            }
            if kept.count >= Self.capacity, kept[address] == nil { kept = [:] }
            kept[address] = entry
            return answer(address, missing: nil, now: now) ?? .failure(entry.failure ?? JWTAssertion.Rejection("No key set."))
        }
    }

    /// What the kept state answers for `address` without reading it, or `nil` when it must be read.
    private func answer(_ address: String, missing kid: String?, now: Date) -> Result<AssertionKeySet, JWTAssertion.Rejection>? {
        guard let entry = kept[address] else { return nil }
        let recentlyRead = now.timeIntervalSince(entry.readAt) < Self.shortest
        if let good = entry.good {
            let fresh = now < good.until
            // Past its time, the last good set serves while reads fail, for at most ``longest`` more.
            let stillServing = entry.failure != nil && now < good.until.addingTimeInterval(Self.longest)
            if fresh || stillServing {
                return recentlyRead || !good.keys.lacks(kid: kid) ? .success(good.keys) : nil
            }
        }
        if let failure = entry.failure, recentlyRead { return .failure(failure) }
        return nil
    }

    /// Reads `address`, once however many requests ask at the same time.
    private func read(_ address: String) async -> Fetch {
        if let running = reading[address] { return await running.value }
        let fetcher = fetcher
        let task = Task { await Self.fetch(address, with: fetcher) }
        reading[address] = task
        let result = await task.value
        reading[address] = nil
        return result
    }

    private static func fetch(_ address: String, with fetcher: (any ClientMetadataFetching)?) async -> Fetch {
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
