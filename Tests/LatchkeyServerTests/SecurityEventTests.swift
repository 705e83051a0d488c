import Foundation
import LatchkeyServer
import Testing

/// The events are one enumeration; the docs list them, and the Activity page offers the kept ones.
@Suite("Security events")
struct SecurityEventTests {
    /// The event names docs/rules.md lists, from "The events" to the end of its list.
    static func documentedEvents() throws -> Set<String> {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let rules = try String(contentsOf: root.appendingPathComponent("docs/rules.md"), encoding: .utf8)
        guard let start = rules.range(of: "The events (one enumeration") else { return [] }
        let list = rules[start.upperBound...]
        let end = list.range(of: "`admin.forbidden`.").map { list[..<$0.upperBound] } ?? list
        let names = try Regex(#"`([a-z_]+(?:\.[a-z_]+)?)`"#)
        return Set(end.matches(of: names).compactMap { $0.output[1].substring.map(String.init) })
    }

    @Test("docs/rules.md lists every event, and no event that does not exist")
    func documented() throws {
        let documented = try Self.documentedEvents()
        let known = Set(SecurityEvent.allCases.map(\.rawValue))
        #expect(known.subtracting(documented).isEmpty, "not in docs/rules.md: \(known.subtracting(documented).sorted())")
        #expect(documented.subtracting(known).isEmpty, "not an event: \(documented.subtracting(known).sorted())")
    }

    @Test("Event names are unique, and every one but token.issued is kept for the Activity page")
    func names() {
        #expect(Set(SecurityEvent.allCases.map(\.rawValue)).count == SecurityEvent.allCases.count)
        #expect(SecurityEvent.allCases.filter { !$0.isKept } == [.tokenIssued])
    }
}
