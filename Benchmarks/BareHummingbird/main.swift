import Foundation
import Hummingbird

// A bare Hummingbird 2 application for the benchmark (Benchmarks/bench.py): one route that answers
// `GET /healthz` with the same constant JSON as Latchkey's, over the same HTTP/1.1 server, and
// nothing else: no middleware, no security headers, no request id. Latchkey's own /healthz ÷ this,
// measured in the same run, is what Latchkey's middleware, routing and headers cost every request.
//
// Usage: latchkey-bare-hummingbird [PORT]; 0 (the default) picks a free port. Prints the port bound
// on its first line of standard output once it listens.

let port = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 0
let router = Router()
let body = ByteBuffer(string: #"{"status":"ok"}"#)
router.get("/healthz") { _, _ in
    Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: body))
}
let application = Application(
    router: router, configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: nil),
    onServerRunning: { channel in
        FileHandle.standardOutput.write(Data("\(channel.localAddress?.port ?? port)\n".utf8))
    })
try await application.runService()
