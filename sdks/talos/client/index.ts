export {
  getConfiguration,
  getConfigurationOutput,
  type GetConfigurationArgs,
  type GetConfigurationOutputArgs,
  type GetConfigurationResult,
} from "./getConfiguration";
