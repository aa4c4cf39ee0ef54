import PipelineCore
import Testing

@Suite("Hex colours")
struct HexColorTests {
    @Test(arguments: [
        ("00FF00", "00FF00"), ("#00FF00", "00FF00"), ("#abcdef", "abcdef"), ("0a1B2c", "0a1B2c"),
    ])
    func sixDigitsWithOrWithoutHash(_ text: String, _ expected: String) {
        #expect(HexColor.normalize(text) == expected)
    }

    @Test(arguments: ["", "#", "00FF0", "#00FF0", "00FF00F", "00FF00FF", "#00FF00FF", "##00FF0", "##00FF00", "0x00FF", "00FG00", "é0FF00", "#é0FF0", " 00FF00"])
    func anythingElseIsRejected(_ text: String) {
        #expect(HexColor.normalize(text) == nil)
    }
}
