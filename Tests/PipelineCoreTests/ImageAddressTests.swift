@testable import PipelineCore
import Testing

@Suite("Image addresses: what the phone can download")
struct ImageAddressTests {
    @Test(arguments: [
        ("https://img.test/a.png", ImageAddress.https),
        ("HtTpS://img.test", .https),
        ("https://<URL_CONTAINING_IMAGE>", .https),  // the specification's own placeholder
        ("https://{{cdn}}/a.png", .https),
        ("http://img.test/a.png", .http),
        ("{{hero}}", .placeholder),
        ("{{cdn}}/a.png", .placeholder),
        ("", .invalid),
        ("https://", .invalid),
        ("https:///a.png", .invalid),
        ("https://?q", .invalid),
        ("https:// img.test", .invalid),
        ("https:img.test/a.png", .invalid),
        ("ftp://img.test/a.png", .invalid),
        ("//img.test/a.png", .invalid),
        ("img/a.png", .invalid),
        ("{hero}", .invalid),
        ("httpx://img.test", .invalid),
        ("http://x", .http),
        ("https://x", .https),
        ("http:/\u{0F}x", .invalid),  // a control character lowered would read as `/`
        ("https\u{1A}//img.test", .invalid),  // … or as `:`
        ("{{", .placeholder),
        ("http://", .invalid),
    ])
    func judged(_ text: String, _ expected: ImageAddress) {
        #expect(ImageAddress(text.utf8.span) == expected, "\(text)")
    }
}
