/**
 * `service-webhooks/dev`: tools for a receiver under local development.
 *
 * @packageDocumentation
 */
export {
  type DevReporter,
  type DevReporterOptions,
  type DevReporterQueue,
  devReporter,
} from './dev-reporter.js';
export {
  DEV_TOKEN_HEADER,
  DEV_URL_ENV,
  type ReceiverReport,
  type ReportBatch,
  type ReportedError,
} from './report.js';
