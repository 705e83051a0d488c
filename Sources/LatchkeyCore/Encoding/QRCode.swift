/// A QR code (ISO/IEC 18004) of a short text, such as a device flow's `verification_uri_complete`,
/// so a phone's camera can open it: byte mode, error correction level M, versions 1 to 10
/// (up to 213 bytes), the mask with the lowest penalty.
///
/// ```swift
/// let code = try QRCode(encoding: "https://auth.example.com/device?user_code=WDJB-MJHT")
/// print(code.terminalText)
/// ```
public struct QRCode: Sendable, Equatable {
    /// The modules, row by row; `true` is dark.
    public let modules: [[Bool]]
    /// The side in modules (21 for version 1, 4 more per version).
    public var size: Int { modules.count }

    /// The text is too long for version 10 at level M.
    public struct TooLong: Error, Sendable {}

    /// - Throws: ``TooLong`` for more than 213 bytes of UTF-8.
    public init(encoding text: String) throws {
        let bytes = Array(text.utf8)
        guard let version = (1...10).first(where: { Self.dataCodewords($0) * 8 >= 4 + Self.countBits($0) + bytes.count * 8 })
        else { throw TooLong() }
        var symbol = Symbol(version: version)
        symbol.drawFunctionPatterns()
        symbol.drawCodewords(Self.interleavedCodewords(bytes, version: version))
        var best: (penalty: Int, modules: [[Bool]])?
        for mask in 0..<8 {
            var candidate = symbol
            candidate.apply(mask: mask)
            candidate.drawFormatBits(mask: mask)
            let penalty = candidate.penalty()
            if best == nil || penalty < best!.penalty { best = (penalty, candidate.modules) }
        }
        modules = best!.modules
    }

    /// The code drawn with Unicode half blocks, two module rows per line, inside the quiet zone of
    /// four modules the standard asks for. Light modules are the blocks, so that on a terminal's usual light-on-dark text
    /// the code comes out dark-on-light, as cameras expect.
    public var terminalText: String {
        let quiet = 4
        func light(_ row: Int, _ column: Int) -> Bool {
            guard row >= 0, row < size, column >= 0, column < size else { return true }
            return !modules[row][column]
        }
        var lines: [String] = []
        for top in stride(from: -quiet, to: size + quiet, by: 2) {
            var line = ""
            for column in -quiet..<(size + quiet) {
                switch (light(top, column), light(top + 1, column)) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    /// The code as an SVG image: one path of dark unit squares inside the four-module quiet zone,
    /// scaled by the page. `label` becomes its accessible name (`role="img"`, `aria-label`).
    public func svg(label: String) -> String {
        var path = ""
        for (row, modules) in modules.enumerated() {
            for (column, dark) in modules.enumerated() where dark { path += "M\(column + 4) \(row + 4)h1v1h-1z" }
        }
        let side = size + 8
        let escaped = label.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "<", with: "&lt;")
        return """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(side) \(side)" role="img" aria-label="\(escaped)" \
            shape-rendering="crispEdges"><rect width="\(side)" height="\(side)" fill="#fff"/><path d="\(path)" fill="#000"/></svg>
            """
    }

    // MARK: Codewords

    /// Error correction codewords per block at level M, by version.
    static let eccPerBlock = [0, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26]
    /// Blocks at level M, by version.
    static let blockCount = [0, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5]

    /// Bits of the character count in byte mode.
    static func countBits(_ version: Int) -> Int { version < 10 ? 8 : 16 }

    /// Codewords in the symbol: the modules left by the function patterns, over eight.
    static func rawCodewords(_ version: Int) -> Int {
        var bits = (16 * version + 128) * version + 64
        if version >= 2 {
            let alignments = version / 7 + 2
            bits -= (25 * alignments - 10) * alignments - 55
            if version >= 7 { bits -= 36 }
        }
        return bits / 8
    }

    static func dataCodewords(_ version: Int) -> Int {
        rawCodewords(version) - eccPerBlock[version] * blockCount[version]
    }

    /// Mode, count, the bytes, terminator and padding, split into blocks, each followed by its
    /// Reed-Solomon codewords, then interleaved.
    static func interleavedCodewords(_ bytes: [UInt8], version: Int) -> [UInt8] {
        var bits: [Bool] = []
        func append(_ value: Int, _ count: Int) {
            for shift in stride(from: count - 1, through: 0, by: -1) { bits.append((value >> shift) & 1 == 1) }
        }
        append(0b0100, 4)
        append(bytes.count, countBits(version))
        for byte in bytes { append(Int(byte), 8) }
        let capacity = dataCodewords(version) * 8
        append(0, min(4, capacity - bits.count))
        append(0, (8 - bits.count % 8) % 8)
        var data = stride(from: 0, to: bits.count, by: 8).map { start in
            bits[start..<start + 8].reduce(UInt8(0)) { $0 << 1 | ($1 ? 1 : 0) }
        }
        var pad: UInt8 = 0xEC
        while data.count < dataCodewords(version) {
            data.append(pad)
            pad ^= 0xEC ^ 0x11
        }

        let blocks = blockCount[version]
        let ecc = eccPerBlock[version]
        let raw = rawCodewords(version)
        let shortBlocks = blocks - raw % blocks
        let shortLength = raw / blocks
        let divisor = ReedSolomon.divisor(degree: ecc)
        var split: [[UInt8]] = []
        var offset = 0
        for index in 0..<blocks {
            let length = shortLength - ecc + (index < shortBlocks ? 0 : 1)
            var block = Array(data[offset..<offset + length])
            offset += length
            let correction = ReedSolomon.remainder(block, divisor)
            // A short block gets a placeholder where long blocks hold their last data codeword.
            if index < shortBlocks { block.append(0) }
            split.append(block + correction)
        }
        var result: [UInt8] = []
        for position in 0...shortLength {
            for (index, block) in split.enumerated() where position != shortLength - ecc || index >= shortBlocks {
                result.append(block[position])
            }
        }
        return result
    }
}

/// Reed-Solomon error correction over GF(2⁸) with the QR polynomial x⁸ + x⁴ + x³ + x² + 1.
enum ReedSolomon {
    static func multiply(_ x: UInt8, _ y: UInt8) -> UInt8 {
        var product = 0
        for bit in stride(from: 7, through: 0, by: -1) {
            product = (product << 1) ^ ((product >> 7) * 0x11D)
            product ^= ((Int(y) >> bit) & 1) * Int(x)
        }
        return UInt8(product)
    }

    /// The generator polynomial of `degree`, highest coefficient (always 1) left out.
    static func divisor(degree: Int) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: degree)
        result[degree - 1] = 1
        var root: UInt8 = 1
        for _ in 0..<degree {
            for index in 0..<degree {
                result[index] = multiply(result[index], root)
                if index + 1 < degree { result[index] ^= result[index + 1] }
            }
            root = multiply(root, 2)
        }
        return result
    }

    static func remainder(_ data: [UInt8], _ divisor: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: divisor.count)
        for byte in data {
            let factor = byte ^ result.removeFirst()
            result.append(0)
            for index in result.indices { result[index] ^= multiply(divisor[index], factor) }
        }
        return result
    }
}

/// A symbol being drawn: modules, and which of them belong to function patterns.
private struct Symbol {
    let version: Int
    let size: Int
    var modules: [[Bool]]
    var isFunction: [[Bool]]

    init(version: Int) {
        self.version = version
        size = version * 4 + 17
        modules = Array(repeating: Array(repeating: false, count: size), count: size)
        isFunction = modules
    }

    mutating func set(_ x: Int, _ y: Int, _ dark: Bool) {
        modules[y][x] = dark
        isFunction[y][x] = true
    }

    mutating func drawFunctionPatterns() {
        for index in 0..<size {
            set(6, index, index % 2 == 0)
            set(index, 6, index % 2 == 0)
        }
        for (x, y) in [(3, 3), (size - 4, 3), (3, size - 4)] {
            for dy in -4...4 {
                for dx in -4...4 where (0..<size).contains(x + dx) && (0..<size).contains(y + dy) {
                    let distance = max(abs(dx), abs(dy))
                    set(x + dx, y + dy, distance != 2 && distance != 4)
                }
            }
        }
        let positions = alignmentPositions()
        for (i, x) in positions.enumerated() {
            for (j, y) in positions.enumerated() {
                let corner = (i == 0 && j == 0) || (i == 0 && j == positions.count - 1) || (i == positions.count - 1 && j == 0)
                if corner { continue }
                for dy in -2...2 {
                    for dx in -2...2 { set(x + dx, y + dy, max(abs(dx), abs(dy)) != 1) }
                }
            }
        }
        drawFormatBits(mask: 0)  // reserves the format areas; drawn again once the mask is chosen
        if version >= 7 {
            var remainder = version
            for _ in 0..<12 { remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25) }
            let bits = version << 12 | remainder
            for index in 0..<18 {
                let dark = (bits >> index) & 1 == 1
                let a = size - 11 + index % 3
                let b = index / 3
                set(a, b, dark)
                set(b, a, dark)
            }
        }
    }

    func alignmentPositions() -> [Int] {
        guard version > 1 else { return [] }
        let count = version / 7 + 2
        let step = (version * 4 + count * 2 + 1) / (count * 2 - 2) * 2
        var positions = [6]
        for index in 0..<(count - 1) { positions.insert(size - 7 - index * step, at: 1) }
        return positions
    }

    /// Level M (`00`) and the mask, BCH-protected, in both copies, and the dark module.
    mutating func drawFormatBits(mask: Int) {
        let data = 0b00 << 3 | mask
        var remainder = data
        for _ in 0..<10 { remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537) }
        let bits = (data << 10 | remainder) ^ 0x5412
        func bit(_ index: Int) -> Bool { (bits >> index) & 1 == 1 }
        for index in 0...5 { set(8, index, bit(index)) }
        set(8, 7, bit(6))
        set(8, 8, bit(7))
        set(7, 8, bit(8))
        for index in 9..<15 { set(14 - index, 8, bit(index)) }
        for index in 0..<8 { set(size - 1 - index, 8, bit(index)) }
        for index in 8..<15 { set(8, size - 15 + index, bit(index)) }
        set(8, size - 8, true)
    }

    /// Places the codewords' bits in the zigzag of two-module columns, right to left, skipping
    /// the vertical timing pattern.
    mutating func drawCodewords(_ codewords: [UInt8]) {
        var bitIndex = 0
        var right = size - 1
        while right >= 1 {
            if right == 6 { right = 5 }
            let upward = (right + 1) & 2 == 0
            for vertical in 0..<size {
                for offset in 0..<2 {
                    let x = right - offset
                    let y = upward ? size - 1 - vertical : vertical
                    guard !isFunction[y][x], bitIndex < codewords.count * 8 else { continue }
                    modules[y][x] = (codewords[bitIndex >> 3] >> (7 - UInt8(bitIndex & 7))) & 1 == 1
                    bitIndex += 1
                }
            }
            right -= 2
        }
    }

    mutating func apply(mask: Int) {
        for y in 0..<size {
            for x in 0..<size where !isFunction[y][x] {
                let invert =
                    switch mask {
                    case 0: (x + y) % 2 == 0
                    case 1: y % 2 == 0
                    case 2: x % 3 == 0
                    case 3: (x + y) % 3 == 0
                    case 4: (x / 3 + y / 2) % 2 == 0
                    case 5: x * y % 2 + x * y % 3 == 0
                    case 6: (x * y % 2 + x * y % 3) % 2 == 0
                    default: ((x + y) % 2 + x * y % 3) % 2 == 0
                    }
                if invert { modules[y][x].toggle() }
            }
        }
    }

    /// The four penalty rules: runs of five or more, 2×2 blocks, finder-like patterns, and
    /// imbalance of dark and light.
    func penalty() -> Int {
        var total = 0
        let columns = (0..<size).map { x in (0..<size).map { y in modules[y][x] } }
        let finderLike: [[Bool]] = [
            [true, false, true, true, true, false, true, false, false, false, false],
            [false, false, false, false, true, false, true, true, true, false, true],
        ]
        for line in modules + columns {
            var run = 1
            for index in 1..<size {
                if line[index] == line[index - 1] {
                    run += 1
                } else {
                    if run >= 5 { total += run - 2 }
                    run = 1
                }
            }
            if run >= 5 { total += run - 2 }
            for start in 0...(size - 11) {
                let window = Array(line[start..<start + 11])
                if finderLike.contains(window) { total += 40 }
            }
        }
        for y in 0..<(size - 1) {
            for x in 0..<(size - 1) {
                let color = modules[y][x]
                if modules[y][x + 1] == color, modules[y + 1][x] == color, modules[y + 1][x + 1] == color { total += 3 }
            }
        }
        let dark = modules.reduce(0) { $0 + $1.filter { $0 }.count }
        let cells = size * size
        let deviation = abs(dark * 20 - cells * 10)
        total += max(0, (deviation + cells - 1) / cells - 1) * 10
        return total
    }
}
