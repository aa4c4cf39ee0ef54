import _CryptoExtras
import PipelineCore

/// A Google service-account JSON key file: who signs the OAuth assertion, with which key, and where it is exchanged
/// for an access token.
public struct ServiceAccountKey: Sendable {
    /// `project_id`: the Firebase project messages are sent in (unless configured otherwise).
    public var projectID: String
    /// `client_email`: the assertion's issuer.
    public var clientEmail: String
    /// `private_key_id`: the JWT header's `kid`.
    public var privateKeyID: String?
    /// `token_uri`: where the assertion is exchanged (`https://oauth2.googleapis.com/token`).
    public var tokenURI: String
    let privateKey: _RSA.Signing.PrivateKey

    /// Reads a key file's contents.
    ///
    /// - Parameters:
    ///   - json: the file's contents.
    ///   - key: the configuration key it came from, for errors.
    /// - Throws: ``SinkConfigurationError`` naming the missing or unusable field (never the key material).
    public init(json: String, key: String) throws(SinkConfigurationError) {
        let object: JSONObject
        do throws(PipelineError) {
            object = try JSONObject(parsing: Array(json.utf8))
        } catch {
            throw SinkConfigurationError(key: key, reason: "not a service-account JSON key file (\(error.issues.first?.reason ?? "invalid JSON"))")
        }
        func field(_ name: String) throws(SinkConfigurationError) -> String {
            guard let value = object[name]?.stringValue, !value.isEmpty else {
                throw SinkConfigurationError(key: key, reason: "the service-account key has no '\(name)'")
            }
            return value
        }
        if let type = object["type"]?.stringValue, type != "service_account" {
            throw SinkConfigurationError(key: key, reason: "the key's type is '\(type)', expected 'service_account'")
        }
        self.projectID = try field("project_id")
        self.clientEmail = try field("client_email")
        self.tokenURI = try field("token_uri")
        self.privateKeyID = object["private_key_id"]?.stringValue
        let pem = try field("private_key")
        do {
            self.privateKey = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw SinkConfigurationError(key: key, reason: "the service-account 'private_key' is not an RSA private key of 2048 bits or more in PEM")
        }
    }

    /// How far before `now` an assertion says it was issued: Google refuses one issued in its future (`invalid_grant`),
    /// so a host clock a few seconds fast would stop the sink at every token exchange (Google's own clients backdate
    /// by as much, golang.org/x/oauth2's `jws`).
    static let clockSkewAllowance: Duration = .seconds(10)

    /// The OAuth 2.0 JWT-bearer assertion (RFC 7523) for `scope`, signed RS256: issued ``clockSkewAllowance`` seconds
    /// before `now`, valid for an hour from then (the longest Google accepts).
    func assertion(scope: String, now: Timestamp) throws -> String {
        var header: JSONObject = ["alg": "RS256", "typ": "JWT"]
        if let privateKeyID { header["kid"] = .string(privateKeyID) }
        let issuedAt = Int(now.secondsSince1970 - Self.clockSkewAllowance.components.seconds)
        let claims: JSONObject = [
            "iss": .string(clientEmail),
            "scope": .string(scope),
            "aud": .string(tokenURI),
            "iat": .int(issuedAt),
            "exp": .int(issuedAt + 3600),
        ]
        return try JSONWebToken.make(header: header, claims: claims) { input in
            Array(try privateKey.signature(for: input, padding: .insecurePKCS1v1_5).rawRepresentation)
        }
    }
}
