/// SHA-1 (FIPS 180-4), used only to derive name-based UUIDs (``MessageID``). Not for security.
///
/// The block is kept as its sixteen big-endian words and filled a word at a time where the input allows, and the
/// padding is written as words: a message id hashes about 60 bytes in two blocks, and feeding and padding them byte
/// by byte cost more than the two blocks' rounds.
struct SHA1 {
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
    /// The block being filled, as big-endian words. The word being filled holds its bytes so far in its high bytes
    /// and zeros below them.
    private var block = InlineArray<16, UInt32>(repeating: 0)
    /// How many bytes of the block are filled.
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
        let count = bytes.count
        // Byte by byte up to a word boundary, then whole words, then the bytes left.
        while index < count, blockCount & 3 != 0 {
            update(byte: bytes[index])
            index &+= 1
        }
        while count &- index >= 4 {
            let word = bytes.extracting(index..<index &+ 4)
            block[blockCount &>> 2] = UInt32(word[0]) << 24 | UInt32(word[1]) << 16 | UInt32(word[2]) << 8 | UInt32(word[3])
            index &+= 4
            length &+= 4
            blockCount &+= 4
            if blockCount == 64 {
                processBlock()
                blockCount = 0
            }
        }
        while index < count {
            update(byte: bytes[index])
            index &+= 1
        }
    }

    /// Hashes one byte after those hashed so far.
    mutating func update(byte: UInt8) {
        let shift = UInt32(24 &- (blockCount & 3) &* 8)
        let word = blockCount &>> 2
        // A word's first byte replaces what the block held there before.
        block[word] = (blockCount & 3 == 0 ? 0 : block[word]) | UInt32(byte) << shift
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
        // The 0x80 byte, then zeros up to 8 bytes short of a block boundary (in a block of its own when fewer than
        // 8 bytes are left after it), then the length in bits, big-endian.
        update(byte: 0x80)
        var word = (blockCount &+ 3) &>> 2
        if word > 14 {
            while word < 16 {
                block[word] = 0
                word &+= 1
            }
            processBlock()
            word = 0
        }
        while word < 14 {
            block[word] = 0
            word &+= 1
        }
        block[14] = UInt32(truncatingIfNeeded: bitLength >> 32)
        block[15] = UInt32(truncatingIfNeeded: bitLength)
        processBlock()
        blockCount = 0
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
        for index in 0..<16 { words[index] = block[index] }
        for index in 16..<80 {
            let mixed = words[index &- 3] ^ words[index &- 8] ^ words[index &- 14] ^ words[index &- 16]
            words[index] = mixed.rotatedLeft(by: 1)
        }
        var (a, b, c, d, e) = state
        // Five rounds per step, each writing the variable the next would have moved out of the way (the usual
        // unrolling: no moves between rounds), and the four groups of 20 rounds as separate loops (no test of the
        // round number in each round).
        @inline(__always)
        func rounds(_ index: Int, _ k: UInt32, _ f: (UInt32, UInt32, UInt32) -> UInt32) {
            e = e &+ a.rotatedLeft(by: 5) &+ f(b, c, d) &+ k &+ words[index]
            b = b.rotatedLeft(by: 30)
            d = d &+ e.rotatedLeft(by: 5) &+ f(a, b, c) &+ k &+ words[index &+ 1]
            a = a.rotatedLeft(by: 30)
            c = c &+ d.rotatedLeft(by: 5) &+ f(e, a, b) &+ k &+ words[index &+ 2]
            e = e.rotatedLeft(by: 30)
            b = b &+ c.rotatedLeft(by: 5) &+ f(d, e, a) &+ k &+ words[index &+ 3]
            d = d.rotatedLeft(by: 30)
            a = a &+ b.rotatedLeft(by: 5) &+ f(c, d, e) &+ k &+ words[index &+ 4]
            c = c.rotatedLeft(by: 30)
        }
        for index in stride(from: 0, to: 20, by: 5) { rounds(index, 0x5A82_7999) { ($0 & $1) | (~$0 & $2) } }
        for index in stride(from: 20, to: 40, by: 5) { rounds(index, 0x6ED9_EBA1) { $0 ^ $1 ^ $2 } }
        for index in stride(from: 40, to: 60, by: 5) { rounds(index, 0x8F1B_BCDC) { ($0 & $1) | ($0 & $2) | ($1 & $2) } }
        for index in stride(from: 60, to: 80, by: 5) { rounds(index, 0xCA62_C1D6) { $0 ^ $1 ^ $2 } }
        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e)
    }
}

extension UInt32 {
    fileprivate func rotatedLeft(by count: UInt32) -> UInt32 {
        (self &<< count) | (self &>> (32 &- count))
    }
}
