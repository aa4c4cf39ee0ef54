import Crypto
import Foundation
import SwiftASN1
import X509

/// A self-signed TLS identity for "localhost", made at test time.
///
/// The key is a fresh P-256 key. The certificate is X.509 v3 with subjectAltName DNS:localhost and IP:127.0.0.1,
/// valid from one hour ago for a day, and can be its own trust root: it carries basicConstraints CA:true,
/// keyUsage digitalSignature and keyCertSign, and extendedKeyUsage serverAuth.
public struct TestTLSIdentity: Sendable {
    /// The certificate as PEM ("-----BEGIN CERTIFICATE-----").
    public let certificatePEM: String
    /// The private key as PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----").
    public let privateKeyPEM: String

    /// Makes a new key and a self-signed certificate for "localhost" and 127.0.0.1.
    ///
    /// - Returns: The identity, ready for ``LocalHTTPServer/start(tls:wireProtocol:port:handler:)``.
    /// - Throws: ``SinkTestSupportError`` if the certificate could not be built or serialized.
    public static func makeLocalhost() throws -> TestTLSIdentity {
        let key = P256.Signing.PrivateKey()
        let certificateKey = Certificate.PrivateKey(key)
        let now = Date()
        do {
            let name = try DistinguishedName {
                CommonName("localhost")
                OrganizationName("SinkTestSupport")
            }
            let extensions = try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(digitalSignature: true, keyCertSign: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([
                    .dnsName("localhost"),
                    .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                ])
            }
            let certificate = try Certificate(
                version: .v3,
                serialNumber: Certificate.SerialNumber(),
                publicKey: certificateKey.publicKey,
                notValidBefore: now.addingTimeInterval(-3600),
                notValidAfter: now.addingTimeInterval(-3600 + 86400),
                issuer: name,
                subject: name,
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: extensions,
                issuerPrivateKey: certificateKey
            )
            return TestTLSIdentity(
                certificatePEM: try certificate.serializeAsPEM().pemString,
                privateKeyPEM: key.pemRepresentation
            )
        } catch {
            throw SinkTestSupportError("could not make a self-signed localhost certificate: \(error)")
        }
    }

    /// Writes the certificate PEM to a new file in `directory`.
    ///
    /// Clients use the file as their trust root.
    ///
    /// - Parameter directory: An existing directory, such as `FileManager.default.temporaryDirectory.path`.
    /// - Returns: The path of the new file.
    /// - Throws: ``SinkTestSupportError`` if the file could not be written.
    public func writeCertificate(into directory: String) throws -> String {
        let url = URL(fileURLWithPath: directory, isDirectory: true)
            .appendingPathComponent("localhost-\(UUID().uuidString).pem")
        do {
            try Data(certificatePEM.utf8).write(to: url, options: .withoutOverwriting)
        } catch {
            throw SinkTestSupportError("could not write the certificate to \(url.path): \(error)")
        }
        return url.path
    }
}
