import PipelineCore
import Testing

@testable import PipelineRuntime

/// Campaign events at the same instant: times are often whole seconds, so a cancellation and a relaunch, or a
/// version published twice, can share one. The topic's order (one partition per campaign) decides.
@Suite("The campaign table orders events of one instant as the topic does")
struct CampaignTableTests {
    func time(_ text: String) -> Timestamp { try! Timestamp(rfc3339: text) }

    func defined(version: Int, at: String, title: String) -> [UInt8] {
        Array(
            #"{"type":"campaign.defined","campaignId":"c-1","version":\#(version),"occurredAt":"\#(at)","content":{"title":"\#(title)","body":"b"}}"#
                .utf8
        )
    }

    func cancelled(at: String) -> [UInt8] {
        Array(#"{"type":"campaign.cancelled","campaignId":"c-1","occurredAt":"\#(at)"}"#.utf8)
    }

    func title(_ definition: CampaignTable.Definition?) -> String? {
        definition?.content.fields["title"]?.stringValue
    }

    @Test("a campaign cancelled and defined again in the same second is live; defined and then cancelled, cancelled")
    func relaunchInTheSameSecond() throws {
        var relaunched = CampaignTable()
        try relaunched.apply(json: defined(version: 1, at: "2026-11-20T09:00:00Z", title: "v1"))
        try relaunched.apply(json: cancelled(at: "2026-11-20T10:00:00Z"))
        try relaunched.apply(json: defined(version: 2, at: "2026-11-20T10:00:00Z", title: "v2"))
        // Before the fix the cancellation won every tie: the relaunched campaign was suppressed for good.
        #expect(!relaunched.isCancelled("c-1", asOf: time("2026-11-20T12:00:00Z")))
        #expect(!relaunched.isCancelled("c-1", asOf: time("2026-11-20T10:00:00Z")))
        #expect(!relaunched.isCancelled("c-1", asOf: time("2026-11-20T09:59:59Z")))
        #expect(title(relaunched.definition("c-1", version: nil, asOf: time("2026-11-20T12:00:00Z"))) == "v2")

        var stopped = CampaignTable()
        try stopped.apply(json: defined(version: 1, at: "2026-11-20T09:00:00Z", title: "v1"))
        try stopped.apply(json: defined(version: 2, at: "2026-11-20T10:00:00Z", title: "v2"))
        try stopped.apply(json: cancelled(at: "2026-11-20T10:00:00Z"))
        #expect(stopped.isCancelled("c-1", asOf: time("2026-11-20T12:00:00Z")))
        #expect(stopped.isCancelled("c-1", asOf: time("2026-11-20T10:00:00Z")))

        // Times still come first: a definition stamped before the cancellation does not reopen it, wherever it is.
        var late = CampaignTable()
        try late.apply(json: cancelled(at: "2026-11-20T10:00:00Z"))
        try late.apply(json: defined(version: 2, at: "2026-11-20T09:59:59Z", title: "v2"))
        #expect(late.isCancelled("c-1", asOf: time("2026-11-20T12:00:00Z")))
    }

    /// A send read again after a crash or a rebalance is judged against the table as its first judging had it: a
    /// cancellation or a new version read since, even one dated before the send's decision time, is not part of it.
    @Test("a table read through an earlier horizon leaves out the events read after it, whatever their time")
    func readingThroughAHorizon() throws {
        var table = CampaignTable()
        try table.apply(json: defined(version: 1, at: "2026-11-20T09:00:00Z", title: "v1"), partition: 0, offset: 0)
        // Not a campaign event: read all the same.
        #expect(throws: PipelineError.self) { try table.apply(json: Array("{}".utf8), partition: 1, offset: 6) }
        let first = table.horizon
        #expect(first == CampaignTable.Horizon([0: 1, 1: 7]))
        try table.apply(json: cancelled(at: "2026-11-20T10:00:00Z"), partition: 0, offset: 1)
        try table.apply(json: defined(version: 2, at: "2026-11-20T09:30:00Z", title: "v2"), partition: 0, offset: 2)
        #expect(table.horizon.covers(first) && !first.covers(table.horizon))

        let noon = time("2026-11-20T12:00:00Z")
        #expect(table.isCancelled("c-1", asOf: noon))
        #expect(title(table.definition("c-1", version: nil, asOf: noon)) == "v2")
        let then = table.reading(through: first)
        #expect(!then.isCancelled("c-1", asOf: noon), "the cancellation was read after the horizon")
        #expect(title(then.definition("c-1", version: nil, asOf: noon)) == "v1")
        #expect(then.definition("c-1", version: 2, asOf: noon) == nil && !then.holdsDefinition(of: "c-1", version: 2))
        #expect(then.holdsDefinition(of: "c-1", version: 1))
        // Its own horizon, or none, leaves nothing out.
        #expect(table.reading(through: table.horizon).isCancelled("c-1", asOf: noon))
        #expect(table.reading(through: nil).isCancelled("c-1", asOf: noon))
        // A partition the horizon had read nothing of: none of its events.
        #expect(table.reading(through: CampaignTable.Horizon([1: 7])).definition("c-1", version: nil, asOf: noon) == nil)
        // Events from a file (no position) are in every reading.
        var file = CampaignTable()
        try file.apply(json: cancelled(at: "2026-11-20T10:00:00Z"))
        #expect(file.reading(through: CampaignTable.Horizon([0: 0])).isCancelled("c-1", asOf: noon))
    }

    @Test("a version published twice at the same instant is its later one, named or not")
    func versionRepublishedInTheSameSecond() throws {
        var table = CampaignTable()
        try table.apply(json: defined(version: 3, at: "2026-11-20T10:00:00Z", title: "typo"))
        try table.apply(json: defined(version: 3, at: "2026-11-20T10:00:00Z", title: "fixed"))
        let instant = time("2026-11-20T12:00:00Z")
        // Before the fix the send that named version 3 got "fixed" and the one that did not got "typo".
        #expect(title(table.definition("c-1", version: 3, asOf: instant)) == "fixed")
        #expect(title(table.definition("c-1", version: nil, asOf: instant)) == "fixed")

        // A later time wins over a later place on the topic; each read as of its instant.
        try table.apply(json: defined(version: 3, at: "2026-11-20T11:00:00Z", title: "reworded"))
        try table.apply(json: defined(version: 3, at: "2026-11-20T10:30:00Z", title: "late arrival"))
        #expect(title(table.definition("c-1", version: 3, asOf: instant)) == "reworded")
        #expect(title(table.definition("c-1", version: nil, asOf: instant)) == "reworded")
        #expect(title(table.definition("c-1", version: 3, asOf: time("2026-11-20T10:45:00Z"))) == "late arrival")
    }

    /// Found by review: a definition without a version after one given the largest (`9223372036854775807`) trapped
    /// numbering the next, and since every instance folds the topic from its beginning as it starts, every start
    /// crashed the same way. It is now a campaign event refused with its field, which the fold logs and skips.
    @Test("a definition without a version after the largest version is refused, naming the version")
    func noVersionAfterTheLargest() throws {
        var table = CampaignTable()
        try table.apply(json: defined(version: Int.max, at: "2026-11-20T09:00:00Z", title: "last"))
        let unnumbered = Array(#"{"type":"campaign.defined","campaignId":"c-1","occurredAt":"2026-11-20T09:00:01Z","content":{"title":"t","body":"b"}}"#.utf8)
        let error = #expect(throws: PipelineError.self) { try table.apply(json: unnumbered) }
        #expect(error?.issues.first?.path.description == "version", "\(String(describing: error))")
        #expect(title(table.definition("c-1", version: Int.max, asOf: time("2026-11-20T09:00:02Z"))) == "last", "the table is as before")
    }

    /// Found by review: a `template` that is not a string was taken as absent, so the definition was kept and
    /// rendered for whatever template a send named (the check that a send names the definition's template was
    /// skipped). It is refused with its field, as the fold's other bad records are.
    @Test("a definition whose template is not a string is refused, naming the template")
    func templateOfAnotherType() throws {
        var table = CampaignTable()
        let numbered = Array(#"{"type":"campaign.defined","campaignId":"c-1","version":1,"template":3,"occurredAt":"2026-11-20T09:00:00Z","content":{"title":"t","body":"b"}}"#.utf8)
        let error = #expect(throws: PipelineError.self) { try table.apply(json: numbered) }
        #expect(error?.issues.first?.path.description == "template", "\(String(describing: error))")
        #expect(table.definition("c-1", version: nil, asOf: time("2026-11-20T09:00:01Z")) == nil, "not kept")
    }
}
