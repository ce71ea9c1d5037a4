// The public keys a Kubernetes API server signs service-account tokens with, as the JWK set an OIDC
// relying party (GCP Workload Identity Federation) verifies them against. Pure.
import { createHash, createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";

/** A PEM key, given as PEM or (as the Talos provider hands out machine secrets) base64 of PEM. */
function pemOf(material: string): string {
  const text = material.includes("-----BEGIN")
    ? material
    : Buffer.from(material, "base64").toString("utf8");
  const start = text.indexOf("-----BEGIN");
  if (start < 0) throw new Error("the service-account signing key is not a PEM key");
  return text.slice(start);
}

/**
 * The `kid` Kubernetes puts in its tokens: the unpadded base64url SHA-256 of the public key's DER
 * (PKIX) encoding (k8s.io/kubernetes pkg/serviceaccount keyIDFromPublicKey).
 */
export function keyId(publicKey: KeyObject): string {
  const der = publicKey.export({ type: "spki", format: "der" });
  return createHash("sha256").update(der).digest("base64url");
}

/** The JWK set (JSON) of the public half of the cluster's service-account signing key. */
export function jwksFromSigningKey(material: string): string {
  const publicKey = createPublicKey(createPrivateKey(pemOf(material)));
  const jwk = publicKey.export({ format: "jwk" });
  const alg = jwk.kty === "RSA" ? "RS256" : jwk.crv === "P-384" ? "ES384" : "ES256";
  // Only the fields Workload Identity Federation accepts.
  const fields = ["kty", "n", "e", "crv", "x", "y"] as const;
  const key: Record<string, string> = { alg, use: "sig", kid: keyId(publicKey) };
  for (const field of fields) {
    const value = jwk[field];
    if (typeof value === "string") key[field] = value;
  }
  return JSON.stringify({ keys: [key] });
}
