// Reads the certificate a node's Talos API (apid, port 50000) presents, through a TLS handshake.
// No trust decision is made (the report only needs its NotAfter), so the chain is not verified; the
// talosconfig's client certificate is offered because apid asks for one, kept in memory only.
import type { X509Certificate } from "node:crypto";
import * as tls from "node:tls";

/** The Talos API port. */
export const TALOS_API_PORT = 50000;

/** A client certificate and key (PEM) offered in the handshake. */
export interface ClientIdentity {
  readonly cert: string;
  readonly key: string;
}

/** Reads a TLS server's leaf certificate; resolves `host:port`'s, rejects after `timeoutMs`. */
export type PeerCertificateReader = (
  host: string,
  port: number,
  timeoutMs: number,
  identity?: ClientIdentity,
) => Promise<X509Certificate>;

/** The real reader: one TLS connection, closed as soon as the peer's certificate is known. */
export const readPeerCertificate: PeerCertificateReader = (host, port, timeoutMs, identity) =>
  new Promise((resolve, reject) => {
    const socket = tls.connect({
      host,
      port,
      // Only reading the certificate; nothing is sent over the connection.
      rejectUnauthorized: false,
      ALPNProtocols: ["h2"],
      ...(host.includes(":") || /^\d+\.\d+\.\d+\.\d+$/.test(host) ? {} : { servername: host }),
      ...(identity ? { cert: identity.cert, key: identity.key } : {}),
    });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no TLS handshake with ${host}:${port} within ${timeoutMs / 1000}s`));
    }, timeoutMs);
    socket.once("secureConnect", () => {
      clearTimeout(timer);
      const certificate = socket.getPeerX509Certificate();
      socket.destroy();
      if (certificate) resolve(certificate);
      else reject(new Error(`${host}:${port} presented no certificate`));
    });
    socket.once("error", (error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(new Error(`TLS handshake with ${host}:${port}: ${error.message}`));
    });
  });
