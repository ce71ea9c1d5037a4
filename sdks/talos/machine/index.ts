export { Bootstrap, type BootstrapArgs, type BootstrapState } from "./bootstrap";
export {
  ConfigurationApply,
  type ConfigurationApplyArgs,
  type ConfigurationApplyState,
} from "./configurationApply";
export {
  getConfiguration,
  getConfigurationOutput,
  type GetConfigurationArgs,
  type GetConfigurationOutputArgs,
  type GetConfigurationResult,
} from "./getConfiguration";
export { Secrets, type SecretsArgs, type SecretsState } from "./secrets";
