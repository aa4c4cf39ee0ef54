package import Foundation

/// The `campaign-pipeline` executable in the build products directory that holds the running test bundle, if it
/// was built (tests that run the real command line use it).
package var campaignPipelineExecutable: URL? {
    let candidates = [Bundle.main.executableURL, URL(fileURLWithPath: CommandLine.arguments[0])].compactMap { $0 }
    for candidate in candidates {
        var directory = candidate.deletingLastPathComponent()
        for _ in 0..<4 {
            let url = directory.appendingPathComponent("campaign-pipeline")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue {
                return url
            }
            directory = directory.deletingLastPathComponent()
        }
    }
    return nil
}
