import Foundation
import PipelineCore

/// Compact JSON Web Tokens (RFC 7519): `base64url(header).base64url(claims).base64url(signature)`. The signature
/// comes from swift-crypto (RS256 for Google's OAuth assertion, ES256 for APNs provider tokens); this type only
/// lays out the bytes.
enum JSONWebToken {
    /// The signing input and a signer's signature over it, joined.
    ///
    /// - Parameters:
    ///   - header: the JOSE header (`alg`, `kid`, `typ`).
    ///   - claims: the claims.
    ///   - sign: signs the ASCII bytes of `header.claims`.
    static func make(header: JSONObject, claims: JSONObject, sign: ([UInt8]) throws -> [UInt8]) rethrows -> String {
        let signingInput = base64URL(JSONValue.object(header).encoded()) + "." + base64URL(JSONValue.object(claims).encoded())
        let signature = try sign(Array(signingInput.utf8))
        return signingInput + "." + base64URL(signature)
    }

    /// Base64url without padding (RFC 7515 §2).
    static func base64URL(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}
