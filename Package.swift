// swift-tools-version: 6.1
import PackageDescription

/// One set of settings for every target, so the whole package builds in Swift 6 mode the same way.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6)
]

/// What a provider that talks HTTP to its remote (WebDAV, S3) builds on.
let httpProviderDependencies: [Target.Dependency] = [
    "FileProviderKit",
    .product(name: "AsyncHTTPClient", package: "async-http-client"),
    .product(name: "NIOCore", package: "swift-nio"),
    .product(name: "NIOHTTP1", package: "swift-nio"),
    .product(name: "NIOPosix", package: "swift-nio"),
    .product(name: "Crypto", package: "swift-crypto"),
]

let package = Package(
    name: "fpfs",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "fpfs", targets: ["fpfs"]),
        .library(name: "FileProviderKit", targets: ["FileProviderKit"]),
        .library(name: "ProviderTesting", targets: ["ProviderTesting"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CFuse",
            pkgConfig: "fuse3",
            providers: [.apt(["libfuse3-dev"])]
        ),
        .systemLibrary(name: "CFallocate"),
        .systemLibrary(name: "CMalloc"),
        .systemLibrary(name: "CSpawn"),
        .target(
            name: "FuseKit",
            dependencies: [
                "CFuse",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(name: "FileProviderKit", swiftSettings: swiftSettings),
        .target(
            name: "MetadataStore",
            dependencies: [
                "FileProviderKit",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "BlockCache",
            dependencies: [
                "CFallocate",
                "FileProviderKit",
                "MetadataStore",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Collections", package: "swift-collections"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "VFS",
            dependencies: [
                "FuseKit", "FileProviderKit", "MetadataStore", "BlockCache",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "LocalProvider",
            dependencies: ["FileProviderKit"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "WebDAVProvider",
            dependencies: httpProviderDependencies,
            swiftSettings: swiftSettings
        ),
        .target(
            name: "S3Provider",
            dependencies: httpProviderDependencies,
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ProviderTesting",
            dependencies: ["FileProviderKit"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "fpfs",
            dependencies: [
                "CFuse", "CMalloc", "CSpawn", "VFS", "FuseKit", "FileProviderKit", "LocalProvider", "WebDAVProvider",
                "S3Provider", "ProviderTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings,
            plugins: ["BuildCommit"]
        ),
        .plugin(name: "BuildCommit", capability: .buildTool()),
        .testTarget(
            name: "FileProviderKitTests", dependencies: ["FileProviderKit"], swiftSettings: swiftSettings),
        .testTarget(
            name: "ProviderTestingTests", dependencies: ["ProviderTesting", "FileProviderKit"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "LocalProviderTests",
            dependencies: ["LocalProvider", "ProviderTesting", "FileProviderKit", "TestServers"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "WebDAVProviderTests",
            dependencies: [
                "WebDAVProvider", "ProviderTesting", "FileProviderKit", "TestServers",
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "S3ProviderTests",
            dependencies: [
                "S3Provider", "ProviderTesting", "FileProviderKit", "TestServers",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "MetadataStoreTests",
            dependencies: [
                "MetadataStore", "FileProviderKit", "TestServers", .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "BlockCacheTests", dependencies: ["BlockCache", "MetadataStore", "FileProviderKit"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "FuseKitTests", dependencies: ["FuseKit", "TestServers"], swiftSettings: swiftSettings),
        .testTarget(
            name: "VFSTests",
            dependencies: ["VFS", "FuseKit", "FileProviderKit", "ProviderTesting", "MetadataStore", "BlockCache"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "MountTests", dependencies: ["TestServers"], swiftSettings: swiftSettings),
        .target(
            name: "TestServers", dependencies: ["CSpawn", .product(name: "Crypto", package: "swift-crypto")],
            path: "Tests/TestServers",
            // Run by the tests with python3 from where they lie, not built or bundled.
            exclude: ["fake-webdav.py", "nextcloud-webdav.py", "s3-fault-proxy.py"],
            swiftSettings: swiftSettings),
    ]
)
