import { describe, expect, it } from 'vitest';
import {
  bedrockBatchAnswer,
  bedrockBatchRecord,
  bedrockJobName,
  bedrockRecordError,
  createJobRequest,
  getJobRequest,
  outputKey,
  parseJob,
} from '../../../functions/providers/bedrock/batch';
import { batchLocation, getObject, s3Sign } from '../../../functions/providers/bedrock/s3';
import { labelledLine, parseJob as parseVertexJob, vertexBatchRequest, vertexLineError } from '../../../functions/providers/vertex-ai/batch';
import { batchGcsLocation, downloadObject } from '../../../functions/providers/vertex-ai/gcs';
import type { ProviderTarget } from '../../../functions/providers/types';

const ctx = { model: 'm', id: 'chatcmpl-x', created: 1, includeUsage: false };
const aws = (over: Record<string, string | undefined> = {}): ProviderTarget => ({
  provider: 'bedrock',
  aws: {
    region: 'eu-west-1',
    accessKeyId: 'AKIA',
    secretAccessKey: 's',
    batchS3Uri: 's3://my-bucket/a/b',
    batchRoleArn: 'arn:aws:iam::123456789012:role/r',
    ...over,
  },
});

describe('Bedrock batch records', () => {
  it('Claude lines become Messages bodies with the Bedrock version and no model or stream', () => {
    const record = bedrockBatchRecord('/v1/chat/completions', 'L0000000003', {
      model: 'us.anthropic.claude-sonnet-4-20250514-v1:0',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hi' },
      ],
      stop: 'END',
    });
    expect(record).toEqual({
      recordId: 'L0000000003',
      modelInput: {
        anthropic_version: 'bedrock-2023-05-31',
        max_tokens: 4096,
        system: [{ type: 'text', text: 'be brief' }],
        messages: [{ role: 'user', content: 'hi' }],
        stop_sequences: ['END'],
      },
    });
  });

  it('refuses other families and image URLs Bedrock cannot fetch, naming the field', () => {
    expect(() => bedrockBatchRecord('/v1/chat/completions', 'L1', { model: 'mistral.mistral-large-2402-v1:0', messages: [] })).toThrow(
      expect.objectContaining({ status: 400, param: 'body.model', code: 'unsupported_model' }),
    );
    expect(() =>
      bedrockBatchRecord('/v1/chat/completions', 'L1', {
        model: 'amazon.nova-pro-v1:0',
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] }],
      }),
    ).toThrow(expect.objectContaining({ status: 400, param: 'messages[0].content[0].image_url.url' }));
  });

  it('reads Claude and Nova outputs back as chat completions, and record errors as statuses', () => {
    const claude = bedrockBatchAnswer(
      '/v1/chat/completions',
      'anthropic.claude-3-5-haiku-20241022-v1:0',
      { id: 'msg_1', content: [{ type: 'text', text: 'yo' }], stop_reason: 'max_tokens', usage: { input_tokens: 4, output_tokens: 1 } },
      ctx,
    );
    expect(claude).toMatchObject({
      id: 'msg_1',
      choices: [{ message: { content: 'yo' }, finish_reason: 'length' }],
      usage: { prompt_tokens: 4, completion_tokens: 1 },
    });
    const nova = bedrockBatchAnswer(
      '/v1/chat/completions',
      'amazon.nova-lite-v1:0',
      { output: { message: { content: [{ text: 'ok' }] } }, stopReason: 'end_turn', usage: { inputTokens: 2, outputTokens: 1 } },
      ctx,
    );
    expect(nova).toMatchObject({ choices: [{ message: { content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 2 } });
    expect(bedrockRecordError({ recordId: 'L1', error: { errorCode: 429, errorMessage: 'slow down' } })).toEqual({ status: 429, message: 'slow down' });
    expect(bedrockRecordError({ recordId: 'L1' })).toMatchObject({ status: 500 });
    expect(bedrockRecordError({ recordId: 'L1', modelOutput: {} })).toBeUndefined();
  });

  it('names jobs, finds output and maps statuses as Bedrock does', () => {
    expect(bedrockJobName('batch_01abc')).toBe('gateway-batch-01abc');
    expect(outputKey('p/batch_1/output/', 'arn:aws:bedrock:us-east-1:1:model-invocation-job/abc123', 'p/batch_1/input.jsonl')).toBe(
      'p/batch_1/output/abc123/input.jsonl.out',
    );
    expect(
      ['Submitted', 'Scheduled', 'InProgress', 'PartiallyCompleted', 'Stopping', 'Stopped', 'Expired'].map((status) => parseJob({ status }).phase),
    ).toEqual(['validating', 'validating', 'in_progress', 'completed', 'cancelling', 'cancelled', 'expired']);
    const create = createJobRequest(aws(), {
      jobName: 'j',
      modelId: 'anthropic.claude-3-haiku-20240307-v1:0',
      inputUri: 's3://b/i',
      outputUri: 's3://b/o/',
      clientRequestToken: 't',
    });
    expect(create.url).toBe('https://bedrock.eu-west-1.amazonaws.com/model-invocation-job');
    expect(JSON.parse(String(create.body))).toMatchObject({ roleArn: 'arn:aws:iam::123456789012:role/r', timeoutDurationInHours: 24 });
    expect(getJobRequest(aws(), 'arn:aws:bedrock:eu-west-1:1:model-invocation-job/x').url).toBe(
      'https://bedrock.eu-west-1.amazonaws.com/model-invocation-job/arn%3Aaws%3Abedrock%3Aeu-west-1%3A1%3Amodel-invocation-job%2Fx',
    );
  });
});

describe('the Bedrock batch bucket', () => {
  it('parses the location and signs virtual-hosted S3 requests for service s3 with a payload hash', async () => {
    expect(batchLocation(aws())).toEqual({ bucket: 'my-bucket', prefix: 'a/b/' });
    expect(batchLocation(aws({ batchS3Uri: 's3://my-bucket' }))).toEqual({ bucket: 'my-bucket', prefix: '' });
    expect(() => batchLocation(aws({ batchS3Uri: 's3://My.Bucket/x' }))).toThrow(expect.objectContaining({ param: 'x-gateway-aws-batch-s3-uri' }));
    const req = getObject(aws(), 'my-bucket', "a/it's (1).jsonl");
    expect(req.url).toBe('https://my-bucket.s3.eu-west-1.amazonaws.com/a/it%27s%20%281%29.jsonl');
    const signed = await s3Sign(req, aws());
    expect(signed.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIA\/\d{8}\/eu-west-1\/s3\/aws4_request/);
    expect(signed.headers['x-amz-content-sha256']).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(getObject(aws({ s3Endpoint: 'https://s3.internal.example/' }), 'my-bucket', 'k').url).toBe('https://s3.internal.example/my-bucket/k');
  });
});

describe('Vertex AI batch lines', () => {
  it('are the live GenerateContentRequest with the line as a label; outputs map back by label and status', () => {
    const request = vertexBatchRequest('/v1/chat/completions', 12, { model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }], stream: true });
    expect(request).toEqual({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], labels: { gateway_line: '12' } });
    expect(labelledLine({ request: { labels: { gateway_line: '12' } } })).toBe(12);
    expect(labelledLine({ request: { labels: { gateway_line: '0' } } })).toBeUndefined();
    expect(vertexLineError({ status: '', response: {} })).toBeUndefined();
    expect(vertexLineError({ status: 'Bad Request: 400 empty text' })).toEqual({ status: 400, message: 'Bad Request: 400 empty text' });
    expect(vertexLineError({ status: { code: 8, message: 'quota' } })).toEqual({ status: 429, message: 'quota' });
    expect(parseVertexJob({ state: 'JOB_STATE_SUCCEEDED', completionStats: { successfulCount: '5', failedCount: '1' } })).toMatchObject({
      phase: 'completed',
      counts: { completed: 5, failed: 1 },
    });
  });

  it('reads the bucket location and escapes object names in Cloud Storage URLs', () => {
    const target: ProviderTarget = { provider: 'vertex-ai', apiKey: 't', vertex: { batchGcsUri: 'gs://bkt/some/where' } };
    expect(batchGcsLocation(target)).toEqual({ bucket: 'bkt', prefix: 'some/where/' });
    expect(downloadObject(target, 'bkt', 'a/b c.jsonl').url).toBe('https://storage.googleapis.com/storage/v1/b/bkt/o/a%2Fb%20c.jsonl?alt=media');
  });
});
