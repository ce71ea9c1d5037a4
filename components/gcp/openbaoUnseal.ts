import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import type { GcpSpec, OpenbaoSpec } from "../config/types";

/** Inputs of an {@link OpenbaoUnsealKey}. */
export interface OpenbaoUnsealKeyArgs {
  readonly gcp: GcpSpec;
  readonly settings: OpenbaoSpec;
  readonly clusterName: string;
  readonly provider: gcp.Provider;
}

/** What OpenBao's `seal "gcpckms"` stanza needs (credentials apart). */
export interface SealStanza {
  readonly project: string;
  readonly region: string;
  readonly key_ring: string;
  readonly crypto_key: string;
}

/** The roles OpenBao's gcpckms seal needs on its key: encrypt/decrypt, and reading the key's metadata. */
export const UNSEAL_ROLES = [
  "roles/cloudkms.cryptoKeyEncrypterDecrypter",
  "roles/cloudkms.viewer",
] as const;

/** A GCP service-account ID (6–30 characters) for the cluster's unseal identity. */
export function unsealAccountId(clusterName: string): string {
  const id = `${clusterName}-openbao-unseal`.slice(0, 30).replace(/-+$/, "");
  return id.length >= 6 ? id : `${id}-unseal`;
}

/**
 * The KMS key OpenBao auto-unseals with, and the identity allowed to use it: a key ring and key
 * (both protected: a key ring can never be deleted, and losing the key loses OpenBao's data), a service
 * account with exactly the roles the seal needs on that key, and its key as a secret.
 */
export class OpenbaoUnsealKey extends pulumi.ComponentResource {
  /** Values for the seal stanza. */
  public readonly seal: pulumi.Output<SealStanza>;
  /** The service account's JSON key (secret), for OpenBao's `credentials`. */
  public readonly credentials: pulumi.Output<string>;
  public readonly serviceAccountEmail: pulumi.Output<string>;

  constructor(name: string, args: OpenbaoUnsealKeyArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:gcp:OpenbaoUnsealKey", name, {}, opts);
    const { settings } = args;
    const resourceOpts = { parent: this, provider: args.provider };

    const keyRing = new gcp.kms.KeyRing(
      `${name}-key-ring`,
      { name: settings.keyRing, location: settings.location, project: args.gcp.project },
      { ...resourceOpts, protect: true },
    );
    const key = new gcp.kms.CryptoKey(
      `${name}-key`,
      {
        name: settings.cryptoKey,
        keyRing: keyRing.id,
        purpose: "ENCRYPT_DECRYPT",
        rotationPeriod: settings.rotationPeriod,
        labels: { "talos-cluster": args.clusterName, purpose: "openbao-unseal" },
      },
      { ...resourceOpts, protect: true },
    );
    const account = new gcp.serviceaccount.Account(
      `${name}-account`,
      {
        accountId: unsealAccountId(args.clusterName),
        displayName: `OpenBao auto-unseal (${args.clusterName})`,
        project: args.gcp.project,
      },
      resourceOpts,
    );
    for (const role of UNSEAL_ROLES) {
      new gcp.kms.CryptoKeyIAMMember(
        `${name}-${role.split(".").pop()!.toLowerCase()}`,
        { cryptoKeyId: key.id, role, member: pulumi.interpolate`serviceAccount:${account.email}` },
        resourceOpts,
      );
    }
    const accountKey = new gcp.serviceaccount.Key(
      `${name}-account-key`,
      { serviceAccountId: account.name },
      resourceOpts,
    );

    this.seal = pulumi.output({
      project: args.gcp.project,
      region: settings.location,
      key_ring: settings.keyRing,
      crypto_key: settings.cryptoKey,
    });
    // The provider hands the key file out base64-encoded; OpenBao wants the JSON itself.
    this.credentials = pulumi.secret(
      accountKey.privateKey.apply((encoded) => Buffer.from(encoded, "base64").toString("utf8")),
    );
    this.serviceAccountEmail = account.email;
    this.registerOutputs({ seal: this.seal, credentials: this.credentials });
  }
}
