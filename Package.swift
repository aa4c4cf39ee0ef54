// swift-tools-version: 6.2
import PackageDescription

// MARK: - Shared settings

/// Language features every target of ours is compiled with (applied by the loop at the bottom).
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "campaign-pipeline",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "campaign-pipeline", targets: ["campaign-pipeline"]),
        .library(name: "KafkaClient", targets: ["KafkaClient"]),
        .library(name: "PipelineCore", targets: ["PipelineCore"]),
        .library(name: "PipelineRuntime", targets: ["PipelineRuntime"]),
        .library(name: "PushSinks", targets: ["PushSinks"]),
        .library(name: "PlatformSinks", targets: ["PlatformSinks"]),
        .library(name: "BasicTemplate", targets: ["BasicTemplate"]),
        .library(name: "CarouselTemplate", targets: ["CarouselTemplate"]),
        .library(name: "TimerTemplate", targets: ["TimerTemplate"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
    ],
    targets: [
        // MARK: - Kafka (the only place that touches C)

        .systemLibrary(
            name: "CRdKafka",
            pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]
        ),
        .target(
            name: "KafkaClient",
            dependencies: [
                "CRdKafka",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: - Templates

        .target(
            name: "PipelineCore",
            dependencies: [
                .product(name: "Mustache", package: "swift-mustache")
            ]
        ),
        .target(name: "BasicTemplate", dependencies: ["PipelineCore"], path: "Plugins/BasicTemplate"),
        .target(name: "CarouselTemplate", dependencies: ["PipelineCore"], path: "Plugins/CarouselTemplate"),
        .target(name: "TimerTemplate", dependencies: ["PipelineCore"], path: "Plugins/TimerTemplate"),

        // MARK: - Sinks

        .target(
            name: "PushSinks",
            dependencies: [
                "PipelineCore",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "PlatformSinks",
            dependencies: [
                "PushSinks",
                "PipelineCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: - The streaming pipeline

        .target(
            name: "PipelineRuntime",
            dependencies: [
                "KafkaClient",
                "PipelineCore",
                "PushSinks",
                "PlatformSinks",
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // MARK: - Operations

        .target(
            name: "MetricsEndpoint",
            dependencies: [
                "PipelineRuntime",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // MARK: - Command line

        .target(
            name: "CampaignPipelineCLI",
            dependencies: [
                "KafkaClient",
                "PipelineCore",
                "PipelineRuntime",
                "MetricsEndpoint",
                "PushSinks",
                "PlatformSinks",
                "BasicTemplate",
                "CarouselTemplate",
                "TimerTemplate",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "campaign-pipeline",
            dependencies: ["CampaignPipelineCLI", "ProcessAllocator"]
        ),
        // jemalloc, linked into the executable on Linux, with its options (Sources/ProcessAllocator/jemalloc_config.c).
        .target(
            name: "ProcessAllocator",
            linkerSettings: [.linkedLibrary("jemalloc", .when(platforms: [.linux]))]
        ),

        // MARK: - Tests

        .testTarget(name: "KafkaClientTests", dependencies: ["KafkaClient", "KafkaWireTestSupport", "TestSupport"]),
        // Transaction markers written over the Kafka protocol: the embedded broker writes none of its own.
        .target(
            name: "KafkaWireTestSupport",
            dependencies: [.product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")],
            path: "Tests/KafkaWireTestSupport"
        ),
        .target(
            name: "TestSupport",
            dependencies: ["PipelineCore", "PushSinks", "TestRunWidth", .product(name: "Logging", package: "swift-log")],
            path: "Tests/TestSupport"
        ),
        // Eight tests per core at once unless the environment says otherwise, set as the test binary loads
        // (Tests/TestRunWidth/test_run_width.c): every test target links it through TestSupport.
        .target(name: "TestRunWidth", path: "Tests/TestRunWidth"),
        .target(
            name: "SinkTestSupport",
            dependencies: [
                "PipelineCore",
                "PlatformSinks",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            path: "Tests/SinkTestSupport"
        ),
        .testTarget(
            name: "PipelineCoreTests",
            dependencies: [
                "PipelineCore", "TestSupport",
                // An independent SHA-1 to check ours against.
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(name: "PushSinksTests", dependencies: ["PushSinks", "PipelineCore", "BasicTemplate", "TestSupport"]),
        .testTarget(
            name: "PlatformSinksTests",
            dependencies: [
                "PlatformSinks", "PushSinks", "PipelineCore", "BasicTemplate", "CarouselTemplate", "TimerTemplate", "TestSupport",
                "SinkTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "PipelineRuntimeTests",
            dependencies: [
                "PipelineRuntime", "PipelineCore", "KafkaClient", "PushSinks", "PlatformSinks", "BasicTemplate", "CarouselTemplate",
                "TimerTemplate", "TestSupport", "SinkTestSupport", "KafkaWireTestSupport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "MetricsEndpointTests",
            dependencies: [
                "MetricsEndpoint", "PipelineRuntime", "PipelineCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(name: "BasicTemplateTests", dependencies: ["BasicTemplate", "PipelineCore", "TestSupport"]),
        .testTarget(name: "CarouselTemplateTests", dependencies: ["CarouselTemplate", "PipelineCore", "TestSupport"]),
        .testTarget(name: "TimerTemplateTests", dependencies: ["TimerTemplate", "PipelineCore", "TestSupport"]),
        .testTarget(
            name: "CampaignPipelineCLITests",
            dependencies: [
                "CampaignPipelineCLI", "PipelineCore", "KafkaClient", "TestSupport", "TestRunWidth", "campaign-pipeline",
                "MetricsEndpoint", "PipelineRuntime",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ]
)

// MARK: - Settings applied to every target of ours

for target in package.targets where target.type != .system && target.name != "ProcessAllocator" {
    target.swiftSettings = (target.swiftSettings ?? []) + strictSettings
}
