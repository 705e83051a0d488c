import Foundation

/// Where tests put their stores, data folders and files: under one folder per test process in the
/// system's temporary folder (`latchkey-tests-PID`), removed when the process exits, so that a run
/// of the suites leaves nothing behind. A run that crashes leaves its folder, to be looked at.
///
/// A test need not remove what it made here, and should not when a server or a store it started
/// may still have the files open.
public enum Scratch {
    /// A path of its own under the process's folder, named `name-UUID`; nothing is made there.
    public static func path(_ name: String) -> URL {
        root.appendingPathComponent("\(name)-\(UUID().uuidString)")
    }

    /// A fresh, empty folder of its own under the process's folder, named `name-UUID`.
    public static func folder(_ name: String) throws -> URL {
        let url = path(name)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The process's folder, made on first use, when the removal at exit is registered too.
    static let root: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-tests-\(getpid())")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: Scratch.root) }
        return url
    }()
}
