package import PipelineCore

/// Where a template's `fields` (what `campaign-pipeline templates` lists, and so what campaign authors read) and what
/// its `render` reads have drifted apart, found with sample contents that hold every field the template reads.
///
/// `fields` is written by hand beside `render`, and nothing else ties the two together: a field renamed in one and not
/// the other still builds, and the listing then names a key every event warns about. This checks, for `contents`:
///
/// - every field `fields` lists is in at least one content (a key path, `link.uri`, or a container, `buttons[]`), so
///   the samples exercise all of them;
/// - every value in the contents is at a path `fields` lists (`buttons[].label` for the labels of `buttons`);
/// - every key of the contents is read on FCM or on APNs (the render warns of none as "not a field of template"),
///   and each content renders on at least one (an APNs sample may leave out what FCM requires).
///
/// Together: listed ⊆ in the samples ⊆ read. A key `render` reads that neither `fields` nor the samples name is not
/// found: put every key the template reads in a sample. Every value's path must be listed, so an object read as a
/// whole (`object(_:)` of free-form keys) needs its keys listed too. A `null` value counts as absent, as the readers
/// take it.
///
/// - Parameters:
///   - renderer: the template.
///   - contents: `content` objects, between them holding every field `fields` lists.
///   - occurredAt: the events' time (the samples' times, such as `remindLater.at`, must be after it).
/// - Returns: one line per problem, empty when the listing and the reads agree.
package func templateFieldListingProblems(
    of renderer: any TemplateRenderer,
    contents: [JSONObject],
    occurredAt: String = "2023-12-20T10:00:00Z"
) -> [String] {
    var problems: [String] = []
    let listed = Set(renderer.fields.map(\.name))
    var present: Set<String> = []
    for (index, content) in contents.enumerated() {
        var leaves: [String] = []
        collectPaths(of: .object(content), at: "", containers: &present, leaves: &leaves)
        present.formUnion(leaves)
        for leaf in leaves where !listed.contains(leaf) {
            problems.append("content \(index): '\(leaf)' is not in fields")
        }
        // By leaf: a platform that never opens an object warns of it as a whole (`colors`), one that reads part of it
        // of each key left (`colors.timer`).
        var unreadOnEvery: Set<String>?
        var failures: [String] = []
        for platform in [Platform.fcm, .apns] {
            switch TemplateRegistry([renderer]).render(eventBytes: listingEvent(renderer.templateID, platform, occurredAt, content).encoded()) {
            case .rendered(let notification):
                let unreadPaths = notification.warnings.filter { $0.message.hasPrefix(unreadKeyWarning) }.map { listedForm(of: $0.path) }
                let unread = Set(leaves.filter { leaf in unreadPaths.contains { leaf == $0 || leaf.hasPrefix($0 + ".") || leaf.hasPrefix($0 + "[") } })
                unreadOnEvery = unreadOnEvery.map { $0.intersection(unread) } ?? unread
            case .failed(let error):
                failures.append("on \(platform): \(error)")
            }
        }
        if unreadOnEvery == nil { problems.append("content \(index) renders on neither platform: \(failures.joined(separator: "; "))") }
        for leaf in (unreadOnEvery ?? []).sorted() {
            problems.append("content \(index): '\(leaf)' is read on neither platform")
        }
    }
    for field in listed.sorted() where !present.contains(field) {
        problems.append("fields lists '\(field)', which no content holds")
    }
    return problems
}

/// How the render's warning of a key nobody read begins (``RenderDiagnostics``).
private let unreadKeyWarning = "not a field of template"

/// The paths of `value` in the listing's form: objects' keys joined with `.`, an array's elements as `[]`. Each
/// object or array below the top is a container (`link`, `buttons[]`); each other value a leaf (`buttons[].label`),
/// once however many elements hold it; an empty object or array is a leaf too. `null` is left out (the readers take
/// it as absent).
private func collectPaths(of value: JSONValue, at path: String, containers: inout Set<String>, leaves: inout [String]) {
    switch value {
    case .null:
        return
    case .object(let object) where !object.isEmpty || path.isEmpty:
        if !path.isEmpty { containers.insert(path) }
        for (key, member) in object { collectPaths(of: member, at: path.isEmpty ? key : "\(path).\(key)", containers: &containers, leaves: &leaves) }
    case .array(let elements) where !elements.isEmpty:
        containers.insert("\(path)[]")
        for element in elements { collectPaths(of: element, at: "\(path)[]", containers: &containers, leaves: &leaves) }
    case .array:
        // Empty: a leaf, so that it is checked like any value.
        if !leaves.contains("\(path)[]") { leaves.append("\(path)[]") }
    default:
        if !leaves.contains(path) { leaves.append(path) }
    }
}

/// A warning's path (`content.buttons[1].lable`) in the listing's form (`buttons[].lable`).
private func listedForm(of path: FieldPath) -> String {
    var form = ""
    for component in path.components.dropFirst() {
        switch component {
        case .key(let key): form += form.isEmpty ? key : ".\(key)"
        case .index: form += "[]"
        }
    }
    return form
}

/// An event of `template` for `platform` with `content`, and a recipient whose attributes fill no placeholder.
private func listingEvent(_ template: String, _ platform: Platform, _ occurredAt: String, _ content: JSONObject) -> JSONValue {
    [
        "eventId": .string("fields-\(platform.rawValue)"),
        "occurredAt": .string(occurredAt),
        "campaignId": "fields",
        "template": .string(template),
        "recipient": ["id": "u", "platform": .string(platform.rawValue), "token": "T", "attributes": [:]],
        "content": .object(content),
    ]
}
