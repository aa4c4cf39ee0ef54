// swift-tools-version: 6.2
import PackageDescription

// A nested package, so the pipeline's own dependency graph never includes package-benchmark.
// Run from this directory: `swift package --disable-sandbox benchmark` (see README.md).
//
// package-benchmark is declared with `traits: ["MallocInterposer"]`: with the default traits,
// Swift 6.3 on Linux also pulls ordo-one/swift-runtime-interposer, which has no local mirror, and
// resolution fails. With this trait malloc counts are real (with `traits: []` they read 0).

/// The root package's identity: SwiftPM names a path dependency after its directory (`main` here),
/// so it is read from this manifest's location rather than hard-coded.
let rootPackage = String(#filePath.split(separator: "/").dropLast(2).last ?? "main").lowercased()

/// The root package's template products every suite renders with.
let templates: [Target.Dependency] = [
    .product(name: "PipelineCore", package: rootPackage),
    .product(name: "BasicTemplate", package: rootPackage),
    .product(name: "CarouselTemplate", package: rootPackage),
    .product(name: "TimerTemplate", package: rootPackage),
]

let package = Package(
    name: "campaign-pipeline-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../"),
        .package(url: "https://github.com/ordo-one/package-benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // MARK: - Suites (one executable target per suite, under Benchmarks/<Suite>/)

        .executableTarget(
            name: "RenderBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "package-benchmark"),
                "RenderFixtures",
            ] + templates,
            path: "Benchmarks/RenderBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "package-benchmark")
            ]
        ),

        // MARK: - Support

        /// The events the suites render, shared with the profiling loop.
        .target(
            name: "RenderFixtures",
            dependencies: [.product(name: "PipelineCore", package: rootPackage)],
            path: "Sources/RenderFixtures"
        ),
        /// A plain render loop for callgrind/perf (no benchmark harness); see README.md.
        .executableTarget(
            name: "RenderProfile",
            dependencies: ["RenderFixtures"] + templates,
            path: "Sources/RenderProfile"
        ),
        /// A plain loop encoding the pipeline's analytics records, for callgrind/perf; see README.md.
        .executableTarget(
            name: "OutcomeProfile",
            dependencies: [
                .product(name: "PipelineCore", package: rootPackage),
                .product(name: "PipelineRuntime", package: rootPackage),
            ],
            path: "Sources/OutcomeProfile"
        ),
    ]
)
