import * as K from '../src/mapping/keys';

/** CONTRACT 8: the data store's key names, each as the contract writes it (operators and other connectors read them). */
it('names every key of the data store layout as the contract does', () => {
  expect([K.processImageKey(1, 2), K.processImageKey(65535, 16777215)]).toEqual(['process:image:casdu:1:ioa:2', 'process:image:casdu:65535:ioa:16777215']);
  expect([K.processImagePattern(1, 2), K.processImagePattern(1, undefined), K.processImagePattern(undefined, 7), K.processImagePattern(undefined, undefined)])
    .toEqual(['process:image:casdu:1:ioa:2', 'process:image:casdu:1:ioa:*', 'process:image:casdu:*:ioa:7', 'process:image:casdu:*:ioa:*']);
  expect(K.processImageKey(3, 4).startsWith(K.PROCESS_IMAGE_PREFIX)).toBe(true);
  expect(K.PROCESS_IMAGE_PREFIX).toBe('process:image:casdu:');
  expect(K.UPDATES_STREAM).toBe('process:updates');
  expect(K.groupName('p1')).toBe('rest-outbound:p1');
  expect([K.configKey('p1'), K.errorsStream('p1'), K.deadLetterStream('p1'), K.idempotencyKey('p1', 'k-9'), K.interrogatedKey('p1')]).toEqual([
    'connectors:p1:config', 'connectors:p1:errors', 'connectors:p1:deadletter', 'connectors:p1:idempotency:k-9', 'connectors:p1:interrogated',
  ]);
  // the keys of our own bookkeeping, under the same prefix (docs/push.md names them)
  expect([K.batchesKey('p1'), K.claimLeaseKey('p1'), K.redriveLeaseKey('p1', 3), K.disabledKey('p1'), K.interrogationLockKey('p1', 3), K.periodicKey('p1', 3)]).toEqual([
    'connectors:p1:batches', 'connectors:p1:claim-lease', 'connectors:p1:redrive-lease:3', 'connectors:p1:disabled', 'connectors:p1:interrogation-lock:3', 'connectors:p1:periodic:3',
  ]);
});
