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
/// found: put every key the template reads in a sample.
///
/// - Parameters:
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
        var unreadOnEvery: Set<String>?
        var failures: [String] = []
        for platform in [Platform.fcm, .apns] {
            switch TemplateRegistry([renderer]).render(eventBytes: listingEvent(renderer.templateID, platform, occurredAt, content).encoded()) {
            case .rendered(let notification):
                let unread = Set(notification.warnings.filter { $0.message.hasPrefix("not a field of template") }.map { listedForm(of: $0.path.description) })
                unreadOnEvery = unreadOnEvery.map { $0.intersection(unread) } ?? unread
            case .failed(let error):
                failures.append("on \(platform): \(error)")
            }
        }
        if unreadOnEvery == nil { problems.append("content \(index) renders on neither platform: \(failures.joined(separator: "; "))") }
        for key in (unreadOnEvery ?? []).sorted() {
            problems.append("content \(index): '\(key)' is read on neither platform")
        }
    }
    for field in listed.sorted() where !present.contains(field) {
        problems.append("fields lists '\(field)', which no content holds")
    }
    return problems
}

/// The paths of `value` in the listing's form: objects' keys joined with `.`, an array's elements as `[]`. Each
/// object or array below the top is a container (`link`, `buttons[]`); each other value a leaf (`buttons[].label`).
private func collectPaths(of value: JSONValue, at path: String, containers: inout Set<String>, leaves: inout [String]) {
    switch value {
    case .object(let object):
        if !path.isEmpty { containers.insert(path) }
        for (key, member) in object { collectPaths(of: member, at: path.isEmpty ? key : "\(path).\(key)", containers: &containers, leaves: &leaves) }
    case .array(let elements):
        containers.insert("\(path)[]")
        for element in elements {
            switch element {
            case .object, .array: collectPaths(of: element, at: "\(path)[]", containers: &containers, leaves: &leaves)
            default: leaves.append("\(path)[]")
            }
        }
    default:
        leaves.append(path)
    }
}

/// A warning's path (`content.buttons[1].lable`) in the listing's form (`buttons[].lable`).
private func listedForm(of path: String) -> String {
    var form = ""
    var inIndex = false
    for character in path.dropFirst("content.".count) {
        if character == "[" {
            inIndex = true
            form.append("[")
        } else if character == "]" {
            inIndex = false
            form.append("]")
        } else if !inIndex {
            form.append(character)
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
