import Foundation
import LatchkeyServer
import PostgresNIO

/// The client read of every client authentication, with the failures counted against it
/// (``PostgresStore/clientAndFailures(id:knownKey:unknownKey:at:)``): a named prepared statement,
/// planned once per pooled connection, as ``TokenByHash`` is and for the same reasons. It lists
/// every column ``ClientColumns/read(_:)`` reads, so that a column a later schema step adds does
/// not change the result of a statement already prepared.
struct ClientAndFailures: PostgresPreparedStatement {
    static let name = "latchkey_client_and_failures"
    static let sql = ClientColumns.andFailures(id: "", knownKey: "", unknownKey: "", at: Date(timeIntervalSince1970: 0))
        .numberedSQL
    static let bindingDataTypes: [PostgresDataType] = [.text, .text, .text, .float8]

    var id: ClientID
    var knownKey: ThrottleKey
    var unknownKey: ThrottleKey
    var at: Date

    func makeBindings() throws -> PostgresBindings {
        ClientColumns.andFailures(id: id, knownKey: knownKey, unknownKey: unknownKey, at: at).bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> (Client?, ThrottleWindow?) {
        try ClientColumns.readWithFailures(PostgresSQLRow(row: row.makeRandomAccess()))
    }
}
