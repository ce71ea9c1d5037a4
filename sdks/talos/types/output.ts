// Output shapes of the Talos provider v0.8.1 schema (nested object types).

export namespace machine {
  /** Talos API client credentials. */
  export interface ClientConfiguration {
    readonly caCertificate: string;
    readonly clientCertificate: string;
    readonly clientKey: string;
  }
  /** A certificate and its private key. */
  export interface Certificate {
    readonly cert: string;
    readonly key: string;
  }
  /** A private key. */
  export interface Key {
    readonly key: string;
  }
  /** The cluster's certificate authorities and keys. */
  export interface Certificates {
    readonly etcd: Certificate;
    readonly k8s: Certificate;
    readonly k8sAggregator: Certificate;
    readonly k8sServiceaccount: Key;
    readonly os: Certificate;
  }
  /** The cluster identity. */
  export interface Cluster {
    readonly id: string;
    readonly secret: string;
  }
  /** Kubernetes bootstrap token and encryption secrets. */
  export interface KubernetesSecrets {
    readonly bootstrapToken: string;
    readonly secretboxEncryptionSecret: string;
    readonly aescbcEncryptionSecret?: string;
  }
  /** The trustd token. */
  export interface TrustdInfo {
    readonly token: string;
  }
  /** A complete set of machine secrets. */
  export interface MachineSecrets {
    readonly certs: Certificates;
    readonly cluster: Cluster;
    readonly secrets: KubernetesSecrets;
    readonly trustdinfo: TrustdInfo;
  }
  /** What a `ConfigurationApply` does to the node when it is destroyed. */
  export interface ConfigurationApplyOnDestroy {
    readonly graceful?: boolean;
    readonly reboot?: boolean;
    readonly reset?: boolean;
  }
  /** Operation timeouts. */
  export interface Timeout {
    readonly create?: string;
    readonly update?: string;
    readonly delete?: string;
  }
  /** Bootstrap timeout. */
  export interface BootstrapTimeouts {
    readonly create?: string;
  }
}

export namespace cluster {
  /** Credentials used to read a kubeconfig. */
  export interface KubeconfigClientConfiguration {
    readonly caCertificate: string;
    readonly clientCertificate: string;
    readonly clientKey: string;
  }
  /** The admin client certificate and API server address of a kubeconfig. */
  export interface KubeconfigKubernetesClientConfiguration {
    readonly caCertificate: string;
    readonly clientCertificate: string;
    readonly clientKey: string;
    readonly host: string;
  }
  /** Kubeconfig timeouts. */
  export interface KubeconfigTimeouts {
    readonly create?: string;
    readonly update?: string;
  }
  /** Health check timeout. */
  export interface GetHealthTimeouts {
    readonly read?: string;
  }
}

export namespace client {
  /** Credentials of a generated talosconfig. */
  export interface GetConfigurationClientConfiguration {
    readonly caCertificate: string;
    readonly clientCertificate: string;
    readonly clientKey: string;
  }
}

export namespace imagefactory {
  /** Image Factory URLs for one schematic, version and platform. */
  export interface GetUrlsUrls {
    readonly diskImage: string;
    readonly diskImageSecureboot: string;
    readonly initramfs: string;
    readonly installer: string;
    readonly installerSecureboot: string;
    readonly iso: string;
    readonly isoSecureboot: string;
    readonly kernel: string;
    readonly kernelCommandLine: string;
    readonly pxe: string;
    readonly uki: string;
  }
}
