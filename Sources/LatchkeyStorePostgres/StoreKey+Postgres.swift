import LatchkeyServer
import NIOCore
import PostgresNIO

// Store keys go to and come from PostgreSQL as the `text` they wrap, so queries interpolate them
// and rows decode into them directly.
extension StoreKey: PostgresEncodable, PostgresThrowingDynamicTypeEncodable,
    PostgresDynamicTypeEncodable, PostgresNonThrowingEncodable
{
    public static var psqlType: PostgresDataType { String.psqlType }
    public static var psqlFormat: PostgresFormat { String.psqlFormat }

    public func encode<JSONEncoder: PostgresJSONEncoder>(
        into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) {
        rawValue.encode(into: &byteBuffer, context: context)
    }
}

extension StoreKey: PostgresDecodable {
    public init<JSONDecoder: PostgresJSONDecoder>(
        from buffer: inout ByteBuffer, type: PostgresDataType, format: PostgresFormat,
        context: PostgresDecodingContext<JSONDecoder>
    ) throws {
        self.init(rawValue: try String(from: &buffer, type: type, format: format, context: context))
    }
}
