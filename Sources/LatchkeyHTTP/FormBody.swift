import Hummingbird
import LatchkeyCore

/// Reads a request's form body strictly: the right content type (RFC 6749 §3.2), at most
/// `limit` bytes, valid encoding, valid UTF-8.
enum FormBody {
    static let limit = 64 * 1024
    /// The failure for a body over ``limit``: answered with 413.
    static let tooLarge = OAuthError.invalidRequest("The body is larger than \(limit / 1024) KiB.")

    static func read(_ request: Request) async -> Result<FormParameters, OAuthError> {
        let contentType = request.headers[.contentType] ?? ""
        let parts = contentType.split(separator: ";").map(HeaderText.trimmed)
        guard let mediaType = parts.first, HeaderText.equalsIgnoringASCIICase(mediaType, "application/x-www-form-urlencoded")
        else {
            return .failure(.invalidRequest("The body must be application/x-www-form-urlencoded."))
        }
        if let charset = parts.dropFirst().first(where: { HeaderText.hasPrefixIgnoringASCIICase($0, "charset=") }),
            !["charset=utf-8", "charset=\"utf-8\""].contains(where: { HeaderText.equalsIgnoringASCIICase(charset, $0) })
        {
            return .failure(.invalidRequest("The body must be encoded as UTF-8."))
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch {
            return .failure(tooLarge)
        }
        return parse(String(validating: buffer.readableBytesView, as: UTF8.self))
    }

    /// Parses a query string (or `nil`) the same way.
    static func query(_ request: Request) -> Result<FormParameters, OAuthError> {
        parse(request.uri.query ?? "")
    }

    private static func parse(_ text: String?) -> Result<FormParameters, OAuthError> {
        guard let text else { return .failure(.invalidRequest("The request is not valid UTF-8.")) }
        do {
            return .success(try FormParameters(decoding: text))
        } catch .tooManyParameters {
            return .failure(.invalidRequest("The request has too many parameters."))
        } catch .parameterTooLong {
            return .failure(
                .invalidRequest("A parameter is longer than \(FormParameters.maximumParameterLength / 1024) KiB."))
        } catch {
            return .failure(.invalidRequest("The parameters are not validly form-encoded UTF-8."))
        }
    }
}
