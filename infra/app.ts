/**
 * CDK entry (cdk.json: `npx tsx infra/app.ts`).
 *
 *   npm run synth                                   # stage prod, 30-day logs, 1024 MB
 *   npx cdk deploy --all -c stage=dev -c logRetentionDays=7 -c memorySize=2048
 *
 *   npm run synth -- -c capacity=managed-instances  # gateway group on Lambda Managed Instances
 *
 * Context: `stage` (default prod), `logRetentionDays` (default 30, a CloudWatch Logs
 * retention period), `memorySize` (MB, default 1024), `memorySizes` (per group,
 * `policies:512,...`), `nag` (default true: cdk-nag AwsSolutions checks; any
 * unacknowledged finding fails synthesis), `capacity` (`on-demand` or
 * `managed-instances`) and the managed-instances settings of infra/stacks/options.ts.
 */
import { App } from 'aws-cdk-lib';
import { buildApp, optionsFromContext } from './stacks/index';

const app = new App();
buildApp(app, optionsFromContext(app));
app.synth();
