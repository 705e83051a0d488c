import Foundation
import LatchkeyCore
import LatchkeyServer
import PostgresNIO

/// The ``OneStatement`` queries of the token endpoint's hot paths, whose text depends only on
/// their shape (how many tokens, with a grant or not), run as named prepared statements: each
/// pooled connection plans them once, where an unnamed statement is planned on every use, and
/// planning these `WITH` queries costs more than running them.
///
/// A shape's text is built once from placeholder records by the very function that builds the
/// query at run time; a query whose text is not a known shape's runs unprepared.
enum PreparedShape: CaseIterable {
    /// A refresh: the rotation storing an access and a refresh token.
    case rotationOfTwo
    /// A code exchange: the redemption storing the grant, an access and a refresh token.
    case redemptionOfTwo
    /// A code exchange without a refresh token.
    case redemptionOfOne

    var sql: String {
        switch self {
        case .rotationOfTwo: RotationOfTwo.sql
        case .redemptionOfTwo: RedemptionOfTwo.sql
        case .redemptionOfOne: RedemptionOfOne.sql
        }
    }

    /// Runs `query` as its shape's prepared statement, answering the count it answers, or `nil`
    /// when no shape has its text.
    static func run(_ query: PostgresQuery, on client: PostgresClient) async throws -> Int64? {
        var changed: Int64 = 0
        switch allCases.first(where: { $0.sql == query.sql }) {
        case .rotationOfTwo:
            for try await count in try await client.execute(Prepared<RotationOfTwo>(binds: query.binds)) { changed = count }
        case .redemptionOfTwo:
            for try await count in try await client.execute(Prepared<RedemptionOfTwo>(binds: query.binds)) { changed = count }
        case .redemptionOfOne:
            for try await count in try await client.execute(Prepared<RedemptionOfOne>(binds: query.binds)) { changed = count }
        case nil:
            return nil
        }
        return changed
    }

    fileprivate static let at = Date(timeIntervalSince1970: 0)
    fileprivate static let grant = GrantRecord(id: "g", clientID: "c", userID: "u", scope: ScopeSet([]), createdAt: at)
    fileprivate static func tokens(_ count: Int) -> [TokenRecord] {
        let kinds: [TokenKind] = [.access, .refresh]
        return kinds.prefix(count).map { kind in
            TokenRecord(
                hash: "t", kind: kind, grantID: "g", clientID: "c", userID: "u", scope: ScopeSet([]), createdAt: at,
                expiresAt: at)
        }
    }
}

/// A statement's text, named after the shape.
protocol PreparedText {
    static var name: String { get }
    static var sql: String { get }
}

enum RotationOfTwo: PreparedText {
    static let name = "latchkey_rotation_of_two"
    static let sql = PostgresStore.rotation(hash: "t", successors: PreparedShape.tokens(2), at: PreparedShape.at).sql
}

enum RedemptionOfTwo: PreparedText {
    static let name = "latchkey_redemption_of_two"
    static let sql = PostgresStore.redemption(
        codeHash: "c", grant: PreparedShape.grant, tokens: PreparedShape.tokens(2), at: PreparedShape.at
    ).sql
}

enum RedemptionOfOne: PreparedText {
    static let name = "latchkey_redemption_of_one"
    static let sql = PostgresStore.redemption(
        codeHash: "c", grant: PreparedShape.grant, tokens: PreparedShape.tokens(1), at: PreparedShape.at
    ).sql
}

/// A ``OneStatement`` query of a known shape, with the values its builder bound.
struct Prepared<Text: PreparedText>: PostgresPreparedStatement {
    static var name: String { Text.name }
    static var sql: String { Text.sql }
    typealias Row = Int64

    var binds: PostgresBindings

    func makeBindings() throws -> PostgresBindings { binds }
    func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }
}
