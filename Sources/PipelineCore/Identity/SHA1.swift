/// SHA-1 (FIPS 180-4), used only to derive name-based UUIDs (``MessageID``). Not for security.
struct SHA1 {
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)

    /// The 20-byte digest of `message`.
    static func hash(_ message: [UInt8]) -> [UInt8] {
        var message = message
        return hash(padding: &message)
    }

    /// The 20-byte digest of `message`, padding `message` in place (it is left padded). For callers
    /// that built `message` only to hash it: this saves copying it.
    static func hash(padding message: inout [UInt8]) -> [UInt8] {
        let digest = digest(padding: &message)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digest.count)
        for index in digest.indices { bytes.append(digest[index]) }
        return bytes
    }

    /// ``hash(padding:)`` as an inline value: no allocation besides the padding of `message`.
    static func digest(padding message: inout [UInt8]) -> InlineArray<20, UInt8> {
        var sha = SHA1()
        let bitLength = UInt64(message.count) &* 8
        message.reserveCapacity((message.count + 8) / 64 * 64 + 64)  // the padded size: one allocation
        message.append(0x80)
        // Zeros up to 8 bytes short of a block boundary, then the length: in bulk, not a byte at a time.
        message.append(contentsOf: repeatElement(0, count: (120 - message.count % 64) % 64))
        for shift in stride(from: 56, through: 0, by: -8) {
            message.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        var words = InlineArray<80, UInt32>(repeating: 0)
        for blockStart in stride(from: 0, to: message.count, by: 64) {
            sha.process(message, at: blockStart, words: &words)
        }
        var digest = InlineArray<20, UInt8>(repeating: 0)
        let state: InlineArray<5, UInt32> = [sha.state.0, sha.state.1, sha.state.2, sha.state.3, sha.state.4]
        for index in state.indices {
            let word = state[index]
            digest[index * 4] = UInt8(truncatingIfNeeded: word >> 24)
            digest[index * 4 + 1] = UInt8(truncatingIfNeeded: word >> 16)
            digest[index * 4 + 2] = UInt8(truncatingIfNeeded: word >> 8)
            digest[index * 4 + 3] = UInt8(truncatingIfNeeded: word)
        }
        return digest
    }

    private mutating func process(_ bytes: [UInt8], at start: Int, words: inout InlineArray<80, UInt32>) {
        for index in 0..<16 {
            let offset = start + index * 4
            words[index] = UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16
                | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
        }
        for index in 16..<80 {
            let mixed = words[index &- 3] ^ words[index &- 8] ^ words[index &- 14] ^ words[index &- 16]
            words[index] = mixed.rotatedLeft(by: 1)
        }
        var (a, b, c, d, e) = state
        // The four groups of 20 rounds as separate loops: no test of the round number in each round.
        func round(_ f: UInt32, _ k: UInt32, _ word: UInt32) {
            let temp = a.rotatedLeft(by: 5) &+ f &+ e &+ k &+ word
            e = d
            d = c
            c = b.rotatedLeft(by: 30)
            b = a
            a = temp
        }
        for index in 0..<20 { round((b & c) | (~b & d), 0x5A82_7999, words[index]) }
        for index in 20..<40 { round(b ^ c ^ d, 0x6ED9_EBA1, words[index]) }
        for index in 40..<60 { round((b & c) | (b & d) | (c & d), 0x8F1B_BCDC, words[index]) }
        for index in 60..<80 { round(b ^ c ^ d, 0xCA62_C1D6, words[index]) }
        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e)
    }
}

extension UInt32 {
    fileprivate func rotatedLeft(by count: UInt32) -> UInt32 {
        (self &<< count) | (self &>> (32 &- count))
    }
}
