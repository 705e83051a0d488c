import Ink

/// Renders an app's consent text from Markdown with every piece of HTML in it escaped, links
/// limited to `https`, `http` and `mailto`, and images dropped (no third-party loads, RFC 9700 §4.2.4).
enum SafeMarkdown {
    static func html(from markdown: String) -> String {
        let escaped =
            markdown
            .replacingOccurrences(of: "&", with: "&amp;")
            .replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
        var parser = MarkdownParser()
        parser.addModifier(
            Modifier(target: .links) { input in
                guard let href = attribute("href", in: input.html), isSafeLink(href) else { return innerText(of: input.html) }
                return "<a href=\"\(href)\" rel=\"noopener noreferrer\">\(innerText(of: input.html))</a>"
            })
        parser.addModifier(Modifier(target: .images) { _ in "" })
        return parser.html(from: escaped)
    }

    private static func attribute(_ name: String, in html: String) -> String? {
        guard let start = html.range(of: "\(name)=\"") else { return nil }
        let rest = html[start.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }

    private static func innerText(of html: String) -> String {
        guard let open = html.firstIndex(of: ">"), let close = html.range(of: "</a>", options: .backwards),
            open < close.lowerBound
        else { return "" }
        return String(html[html.index(after: open)..<close.lowerBound])
    }

    static func isSafeLink(_ href: String) -> Bool {
        let lower = href.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://") || lower.hasPrefix("mailto:") else { return false }
        return !href.contains(where: { "\"'<> \\`".contains($0) || $0.isNewline })
    }
}
