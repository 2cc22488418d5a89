import { expect } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import type { AllFakes } from '../fakes';
import { call } from './gateway';

/** Credentials the Bedrock fake checks SigV4 against: start it with `startAllFakes({}, { credentials: FAKE_AWS })`. */
export const FAKE_AWS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };

/**
 * Managed providers `<prefix>-openai`, `-claude`, `-gemini`, `-bedrock` and `-cohere`, each
 * pointed at its fake, so a test names a provider as a user does: `x-gateway-provider: @m-claude`.
 */
export async function manageFakes(gw: LocalGateway, fakes: AllFakes, prefix: string): Promise<void> {
  const managed = [
    { slug: `${prefix}-openai`, provider: 'openai', api_key: 'sk-openai', custom_host: `${fakes.openai.url}/v1` },
    { slug: `${prefix}-claude`, provider: 'anthropic', api_key: 'sk-ant', custom_host: `${fakes.anthropic.url}/v1` },
    { slug: `${prefix}-gemini`, provider: 'google', api_key: 'gemini-key', custom_host: `${fakes.gemini.url}/v1beta` },
    {
      slug: `${prefix}-bedrock`,
      provider: 'bedrock',
      aws_access_key_id: FAKE_AWS.accessKeyId,
      aws_secret_access_key: FAKE_AWS.secretAccessKey,
      aws_region: 'us-east-1',
      custom_host: fakes.bedrock.url,
    },
    { slug: `${prefix}-cohere`, provider: 'cohere', api_key: 'co-key', custom_host: fakes.cohere.url },
  ];
  for (const body of managed) {
    const created = await call(gw, 'POST', '/v1/providers', { body });
    expect(created.status, created.text).toBe(200);
  }
}
