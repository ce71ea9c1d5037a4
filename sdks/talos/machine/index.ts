export { Bootstrap, BootstrapArgs, BootstrapState } from "./bootstrap";
export {
  ConfigurationApply,
  ConfigurationApplyArgs,
  ConfigurationApplyState,
} from "./configurationApply";
export {
  getConfiguration,
  getConfigurationOutput,
  GetConfigurationArgs,
  GetConfigurationOutputArgs,
  GetConfigurationResult,
} from "./getConfiguration";
export { Secrets, SecretsArgs, SecretsState } from "./secrets";
