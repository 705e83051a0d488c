import Foundation
import Hummingbird
import LatchkeyResource
import LatchkeyResourceHummingbird

/// The JSON-RPC methods of MCP this example answers: `initialize`, `ping`, `tools/list` and
/// `tools/call` (tools `echo` and `whoami`). Notifications get 202, anything else -32601.
enum MCPEndpoint {
    static let protocolVersions = ["2025-11-25", "2025-06-18", "2025-03-26"]

    static func answer(_ request: Request, context: ResourceRequestContext) async throws -> Response {
        let body = try await request.body.collect(upTo: 64 * 1024)
        guard let message = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any],
            let method = message["method"] as? String
        else {
            return json(["jsonrpc": "2.0", "id": NSNull(), "error": ["code": -32700, "message": "Parse error"]])
        }
        // A notification (no id) is accepted and needs no answer.
        guard let id = message["id"] else { return Response(status: .accepted) }
        let params = message["params"] as? [String: Any] ?? [:]
        let result: [String: Any]
        switch method {
        case "initialize":
            let asked = params["protocolVersion"] as? String ?? ""
            result = [
                "protocolVersion": protocolVersions.contains(asked) ? asked : protocolVersions[0],
                "capabilities": ["tools": ["listChanged": false]],
                "serverInfo": ["name": "latchkey-example-mcp", "version": "1.0.0"],
            ]
        case "ping":
            result = [:]
        case "tools/list":
            result = ["tools": tools]
        case "tools/call":
            result = call(params["name"] as? String, arguments: params["arguments"] as? [String: Any] ?? [:], context: context)
        default:
            return json(["jsonrpc": "2.0", "id": id, "error": ["code": -32601, "message": "Method not found: \(method)"]])
        }
        return json(["jsonrpc": "2.0", "id": id, "result": result])
    }

    static var tools: [[String: Any]] {
        [
            [
                "name": "echo", "description": "Says back the text it is given.",
                "inputSchema": [
                    "type": "object", "properties": ["text": ["type": "string"]], "required": ["text"],
                ],
            ],
            [
                "name": "whoami", "description": "Says which user and app the access token belongs to.",
                "inputSchema": ["type": "object", "properties": [String: Any]()],
            ],
        ]
    }

    static func call(_ name: String?, arguments: [String: Any], context: ResourceRequestContext) -> [String: Any] {
        switch name {
        case "echo":
            return text(arguments["text"] as? String ?? "")
        case "whoami":
            let token = context.accessToken
            return text(
                "user \(token?.subject ?? "none") via app \(token?.clientID ?? "unknown"), scopes: "
                    + (token?.scopes.sorted().joined(separator: " ") ?? ""))
        default:
            return ["content": [["type": "text", "text": "No tool named \(name ?? "")."]], "isError": true]
        }
    }

    static func text(_ value: String) -> [String: Any] {
        ["content": [["type": "text", "text": value]], "isError": false]
    }

    static func json(_ object: [String: Any]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data("{}".utf8)
        return Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
