/// What a tap on a notification or button does (`adb_a_type`, button `type`).
///
/// Values are upper case and compared exactly: the Android SDK fails the whole notification on any
/// other string.
public enum LinkType: String, Sendable, Hashable, CaseIterable {
    /// Open a web URL.
    case webURL = "WEBURL"
    /// Open a deep link into the app.
    case deepLink = "DEEPLINK"
    /// Dismiss the notification.
    case dismiss = "DISMISS"
    /// Open the app.
    case openApp = "OPENAPP"

    /// All wire values, in the order of `allCases`: for ``FieldReader/choice(_:from:required:)-(FieldName,_,_)`` and
    /// ``FieldReader/choiceIndex(_:from:required:unknown:)-(FieldName,_,_,_)``.
    public static let wireValues = allCases.map(\.rawValue)
}
