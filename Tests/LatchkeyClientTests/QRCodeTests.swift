import Foundation
import LatchkeyClient
import LatchkeyCore
import Subprocess
import Testing

/// ``QRCode`` read back by a decoder we did not write: zxing-cpp, from PyPI (scripts/test installs it).
@Suite("QR codes for the device flow")
struct QRCodeTests {
    /// Whether `python3 -c "import zxingcpp, numpy"` works here.
    static func decoderAvailable() async -> Bool {
        let found = try? await Subprocess.run(
            .name("python3"), arguments: ["-c", "import zxingcpp, numpy"], output: .discarded, error: .discarded)
        return found?.terminationStatus.isSuccess ?? false
    }

    /// Decodes the code's modules (as a PBM picture with a quiet zone, eight pixels a module) with zxing-cpp.
    func decode(_ code: QRCode) async throws -> String {
        let quiet = 4
        let side = (code.size + 2 * quiet) * 8
        var rows: [String] = []
        for y in 0..<side {
            let row = (0..<side).map { x -> String in
                let (mx, my) = (x / 8 - quiet, y / 8 - quiet)
                let inside = (0..<code.size).contains(mx) && (0..<code.size).contains(my)
                return inside && code.modules[my][mx] ? "1" : "0"
            }
            rows.append(row.joined(separator: " "))
        }
        let picture = FileManager.default.temporaryDirectory.appendingPathComponent("qr-\(UUID().uuidString).pbm")
        try ("P1\n\(side) \(side)\n" + rows.joined(separator: "\n") + "\n").write(to: picture, atomically: true, encoding: .ascii)
        defer { try? FileManager.default.removeItem(at: picture) }
        let script = """
            import sys, numpy, zxingcpp
            lines = open(sys.argv[1]).read().split()
            width, height = int(lines[1]), int(lines[2])
            bits = numpy.array([int(v) for v in lines[3:]], dtype=numpy.uint8).reshape(height, width)
            image = numpy.where(bits == 1, 0, 255).astype(numpy.uint8)
            found = zxingcpp.read_barcodes(image, formats=zxingcpp.BarcodeFormat.QRCode)
            sys.stdout.write("\\n".join(r.text for r in found))
            """
        let decoded = try await Subprocess.run(
            .name("python3"), arguments: ["-c", script, picture.path], output: .string(limit: 1 << 20))
        return decoded.standardOutput
    }

    @Test(
        "Every version from 1 to 10 decodes to the text it encodes",
        .enabled("needs python3 with zxing-cpp") {
            ProcessInfo.processInfo.environment["CI"] != nil ? true : await decoderAvailable()
        },
        arguments: [(10, 1), (20, 2), (40, 3), (60, 4), (80, 5), (100, 6), (120, 7), (150, 8), (175, 9), (210, 10)])
    func roundTrip(length: Int, version: Int) async throws {
        let base = "https://auth.example.com/device?user_code=WDJB-MJHT&x"
        let text = String(String(repeating: base, count: 5).utf8.prefix(length))!
        let code = try QRCode(encoding: text)
        #expect(code.size == 17 + 4 * version)
        #expect(try await decode(code) == text)
    }

    @Test("More than version 10 holds is refused")
    func tooLong() {
        #expect(throws: QRCode.TooLong.self) { try QRCode(encoding: String(repeating: "x", count: 214)) }
        #expect((try? QRCode(encoding: String(repeating: "x", count: 213))) != nil)
    }

    @Test("The terminal drawing has two module rows a line, inside a quiet zone")
    func terminalText() throws {
        let code = try QRCode(encoding: "https://auth.example.com/device")
        let lines = code.terminalText.split(separator: "\n")
        #expect(lines.count == (code.size + 8 + 1) / 2)
        #expect(lines.allSatisfy { $0.count == code.size + 8 })
        #expect(lines.first?.allSatisfy { $0 == "█" } == true)
    }
}
