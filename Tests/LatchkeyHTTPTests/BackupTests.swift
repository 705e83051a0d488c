import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyStoreSQLite
import LatchkeyTestSupport
import Testing

/// `latchkey backup` as an operator runs it: beside a serving `latchkey serve` under load.
@Suite("latchkey backup")
struct BackupTests {
    @Test("A backup taken under load holds every token answered before it started, and opens as a store")
    func backupUnderLoad() async throws {
        let dir = Scratch.path("backup").path
        let created = try await runLatchkey([
            "clients", "create", "--type", "service", "--name", "Load", "--scope", "profile", "--json", "--data-dir", dir,
        ])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(created.stdout.utf8)) as? [String: Any])
        let basic =
            "Basic "
            + Data("\(object["client_id"] as! String):\(object["client_secret"] as! String)".utf8).base64EncodedString()
        let port = try freePort()
        let server = try await ServeProcess(["--port", "\(port)", "--data-dir", dir])
        try await server.waitFor("Latchkey is serving")

        // Four connections keep getting tokens; those answered before the backup starts must be in it.
        let received = ReceivedTokens()
        let load = (0..<4).map { _ in
            Task {
                let browser = Browser(port: port)
                while !Task.isCancelled {
                    let page = try await browser.post(
                        "/oauth2/token", form: [("grant_type", "client_credentials")], headers: [.authorization: basic])
                    if let token = page.jsonObject["access_token"] as? String {
                        await received.add(token)
                    } else {
                        await received.refused("\(page.status) \(page.body.prefix(300))")
                    }
                }
                try await browser.close()
            }
        }
        // A load, not a benchmark: the whole suite runs beside it on two cores, where a debug
        // server may answer only a few tokens a second, so the counts are small and the wait long.
        let loaded = ContinuousClock.now + .seconds(60)
        while await received.count < 50 {
            guard ContinuousClock.now < loaded else {
                for task in load { task.cancel() }
                _ = try? await server.terminate()
                Issue.record(
                    "the token load reached \(await received.count) of 50 tokens; last refusal: \(await received.lastRefusal ?? "none")"
                )
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let before = await received.all
        let path = dir + "/backup.sqlite"
        // Waiting for the CLI holds no thread, so the load goes on meanwhile.
        let backup = try await runLatchkey(["backup", path, "--data-dir", dir])
        #expect(backup.status == 0, "\(backup.stderr)")
        // The server went on serving: tokens keep coming after the backup.
        let deadline = ContinuousClock.now + .seconds(30)
        while await received.count < before.count + 20, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(await received.count >= before.count + 20, "the server kept answering")
        for task in load { task.cancel() }
        #expect(try await server.terminate() == 0)

        let copy = try SQLiteStore(path: path)
        for token in before {
            #expect(try await copy.token(presented: token) != nil)
        }
        #expect(try await copy.appliedSchemaSteps() == SchemaMigration.all.count)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600, "the copy holds secret hashes: its owner's only")
        let again = try await runLatchkey(["backup", path, "--data-dir", dir])
        #expect(again.status != 0 && again.stderr.contains("exists"), "an existing file is never overwritten")
        let postgres = try await runLatchkey(["backup", path + "2", "--database-url", "postgres://nobody@127.0.0.1:1/none"])
        #expect(postgres.status != 0 && postgres.stderr.contains("pg_dump"))
    }
}
