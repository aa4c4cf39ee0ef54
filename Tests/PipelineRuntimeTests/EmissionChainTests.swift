@testable import PipelineRuntime
import Synchronization
import Testing

@Suite("Emissions run one after the other, and are cancelled latest first")
struct EmissionChainTests {
    /// Found by review: a stop that came while the reading waited for the oldest emission cancelled that one only. It
    /// left its outputs waiting for room in the producer's queue and ended, and the next emission, not cancelled yet,
    /// went on at once and sent its payloads straight to the producer, ahead of them (a key's later payload written
    /// first). The emissions waiting behind it are cancelled first now.
    @Test("a stop while the reading waits for an emission cancels the emissions behind it before it")
    func stopCancelsLaterEmissionsFirst() async {
        var chain = EmissionChain()
        chain.append {
            while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(1)) }
            return true
        }
        let nextWasCancelled = Mutex<Bool?>(nil)
        chain.append {
            nextWasCancelled.withLock { $0 = Task.isCancelled }
            return true
        }
        let waiting = chain
        let reading = Task {
            var chain = waiting
            await chain.wait(untilAtMost: 1)
        }
        try? await Task.sleep(for: .milliseconds(20))
        reading.cancel()
        await reading.value
        await chain.wait(untilAtMost: 0)
        #expect(nextWasCancelled.withLock { $0 } == true, "the next emission was cancelled by the time it went on")
    }

    /// An emission that leaves its batch unemitted ends the chain: the later ones do not run, as their completed
    /// events would otherwise be committed past it.
    @Test("an emission that leaves its batch unemitted ends the chain, and each runs after the one before it")
    func unemittedBatchEndsTheChain() async {
        let ran = Mutex<[Int]>([])
        var chain = EmissionChain()
        for index in 0..<4 {
            chain.append {
                try? await Task.sleep(for: .milliseconds(5 * (3 - index)))
                ran.withLock { $0.append(index) }
                return index != 1
            }
        }
        await chain.wait(untilAtMost: 0)
        #expect(ran.withLock { $0 } == [0, 1])
    }
}
