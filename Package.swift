// swift-tools-version:6.1
import PackageDescription

/// Settings shared by every target of ours (not by our dependencies).
let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "Latchkey",
    platforms: [.macOS(.v15), .iOS(.v17)],
    products: [
        .library(name: "LatchkeyCore", targets: ["LatchkeyCore"]),
        .library(name: "LatchkeyServer", targets: ["LatchkeyServer"]),
        .library(name: "LatchkeyClient", targets: ["LatchkeyClient"]),
        .library(name: "LatchkeyPasswords", targets: ["LatchkeyPasswords"]),
        .library(name: "LatchkeyResource", targets: ["LatchkeyResource"]),
        .library(name: "LatchkeyResourceHummingbird", targets: ["LatchkeyResourceHummingbird"]),
        .executable(name: "latchkey", targets: ["latchkey"]),
        .executable(name: "latchkey-example-mcp", targets: ["ExampleMCPServer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto", from: "4.1.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/JohnSundell/Ink", from: "0.6.0"),
        // `swift package generate-documentation`: the DocC catalogues of LatchkeyClient and LatchkeyResource.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.4.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        .package(
            url: "https://github.com/apple/swift-configuration", from: "1.4.0",
            traits: [.defaults, "CommandLineArguments"]),
    ],
    targets: [
        .target(
            name: "LatchkeyCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        .target(
            name: "LatchkeyServer",
            dependencies: [
                "LatchkeyCore", "LatchkeyClient", .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            // The list of common passwords the password policy refuses, and the e-mails' templates,
            // compiled into the binary.
            resources: [
                .embedInCode("Resources/common-passwords.txt"), .embedInCode("Resources/mail/mail-text.mustache"),
                .embedInCode("Resources/mail/mail-html.mustache"),
            ],
            swiftSettings: strict),
        .target(
            name: "LatchkeyClient",
            dependencies: [
                "LatchkeyCore", .product(name: "JWTKit", package: "jwt-kit"), .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        // For the resource servers that accept Latchkey's tokens: a framework-free core and its
        // Hummingbird middleware.
        .target(
            name: "LatchkeyResource",
            dependencies: [
                "LatchkeyCore", .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        .target(
            name: "LatchkeyResourceHummingbird",
            dependencies: [
                "LatchkeyResource", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strict),
        // The benchmark's baseline (Benchmarks/bench.py): a bare Hummingbird application.
        .executableTarget(
            name: "latchkey-bare-hummingbird",
            dependencies: [.product(name: "Hummingbird", package: "hummingbird")],
            path: "Benchmarks/BareHummingbird",
            swiftSettings: strict),
        .executableTarget(
            name: "ExampleMCPServer",
            dependencies: [
                "LatchkeyResource", "LatchkeyResourceHummingbird", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/MCPServer",
            swiftSettings: strict),
        .target(
            name: "LatchkeyPasswords",
            dependencies: [
                "LatchkeyServer",
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict),
        .target(
            name: "LatchkeyStoreSQLite",
            dependencies: ["LatchkeyCore", "LatchkeyServer", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict),
        .target(
            name: "LatchkeyMail",
            dependencies: [
                "LatchkeyCore", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict),
        .target(
            name: "LatchkeyStorePostgres",
            dependencies: [
                "LatchkeyCore", "LatchkeyServer",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict),
        .target(
            name: "LatchkeyHTTP",
            dependencies: [
                "LatchkeyCore", "LatchkeyServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Ink", package: "Ink"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            // The page templates, style sheet and script, compiled into the binary.
            resources: [.embedInCode("Templates")],
            swiftSettings: strict),
        .executableTarget(
            name: "latchkey",
            dependencies: [
                "LatchkeyCore", "LatchkeyServer", "LatchkeyHTTP", "LatchkeyPasswords", "LatchkeyStoreSQLite",
                "LatchkeyStorePostgres", "LatchkeyClient", "LatchkeyMail",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
            ],
            swiftSettings: strict),
        .target(
            name: "LatchkeyTestSupport",
            dependencies: [
                "LatchkeyCore", "LatchkeyServer", "LatchkeyStoreSQLite", "LatchkeyStorePostgres", "LatchkeyHTTP",
                "LatchkeyPasswords",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/LatchkeyTestSupport",
            swiftSettings: strict),
        .testTarget(
            name: "LatchkeyCoreTests",
            dependencies: [
                "LatchkeyCore", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "LatchkeyClientTests",
            dependencies: ["LatchkeyCore", "LatchkeyClient", .product(name: "Subprocess", package: "swift-subprocess")],
            swiftSettings: strict),
        .testTarget(
            name: "LatchkeyStoreTests",
            dependencies: [
                "LatchkeyCore", "LatchkeyServer", "LatchkeyStoreSQLite", "LatchkeyStorePostgres", "LatchkeyTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "LatchkeyServerTests",
            dependencies: [
                "LatchkeyCore", "LatchkeyServer", "LatchkeyStoreSQLite", "LatchkeyPasswords", "LatchkeyTestSupport",
                "LatchkeyMail",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "LatchkeyHTTPTests",
            dependencies: [
                "LatchkeyCore", "LatchkeyServer", "LatchkeyHTTP", "LatchkeyStoreSQLite", "LatchkeyTestSupport",
                "LatchkeyClient", "LatchkeyResource", "LatchkeyResourceHummingbird",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Subprocess", package: "swift-subprocess"),
            ],
            swiftSettings: strict),
    ]
)
