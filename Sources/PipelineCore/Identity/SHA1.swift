/// SHA-1 (FIPS 180-4), used only to derive name-based UUIDs (``MessageID``). Not for security.
struct SHA1 {
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
    /// The block being filled, and how many of its bytes are.
    private var block = InlineArray<64, UInt8>(repeating: 0)
    private var blockCount = 0
    /// The number of bytes hashed so far.
    private var length: UInt64 = 0

    /// A hash of nothing yet: feed it with ``update(_:)``, then take ``finalize()``. Nothing is allocated.
    init() {}

    /// The 20-byte digest of `message`.
    static func hash(_ message: [UInt8]) -> [UInt8] {
        var sha = SHA1()
        sha.update(message.span)
        let digest = sha.finalize()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digest.count)
        for index in digest.indices { bytes.append(digest[index]) }
        return bytes
    }

    /// Hashes `bytes` after those hashed so far.
    mutating func update(_ bytes: Span<UInt8>) {
        var index = 0
        while index < bytes.count {
            update(byte: bytes[index])
            index &+= 1
        }
    }

    /// Hashes one byte after those hashed so far.
    mutating func update(byte: UInt8) {
        block[blockCount] = byte
        blockCount &+= 1
        length &+= 1
        if blockCount == 64 {
            processBlock()
            blockCount = 0
        }
    }

    /// The digest of the bytes hashed (the hash is padded: feed it nothing more).
    mutating func finalize() -> InlineArray<20, UInt8> {
        let bitLength = length &* 8
        update(byte: 0x80)
        // Zeros up to 8 bytes short of a block boundary, then the length in bits, big-endian.
        while blockCount != 56 { update(byte: 0) }
        for shift in stride(from: 56, through: 0, by: -8) {
            update(byte: UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        var digest = InlineArray<20, UInt8>(repeating: 0)
        let state: InlineArray<5, UInt32> = [state.0, state.1, state.2, state.3, state.4]
        for index in state.indices {
            let word = state[index]
            digest[index * 4] = UInt8(truncatingIfNeeded: word >> 24)
            digest[index * 4 + 1] = UInt8(truncatingIfNeeded: word >> 16)
            digest[index * 4 + 2] = UInt8(truncatingIfNeeded: word >> 8)
            digest[index * 4 + 3] = UInt8(truncatingIfNeeded: word)
        }
        return digest
    }

    private mutating func processBlock() {
        var words = InlineArray<80, UInt32>(repeating: 0)
        for index in 0..<16 {
            let offset = index * 4
            words[index] = UInt32(block[offset]) << 24 | UInt32(block[offset + 1]) << 16
                | UInt32(block[offset + 2]) << 8 | UInt32(block[offset + 3])
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
