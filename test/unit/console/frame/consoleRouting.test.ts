import { RequestError } from '../../../../src/errors';
import { isRefusal, orderIdOf, param, refusal } from '../../../../src/console/frame/consoleRouting';

const thrown = (work: () => unknown): unknown => {
  try {
    work();
  } catch (error) {
    return error;
  }
  throw new Error('nothing was thrown');
};

describe('the console’s refusals', () => {
  it('When a console route refuses, then it throws the one error type, with its code and its page’s heading', () => {
    const error = refusal(400, 'invalid_query', 'Bad filter', 'from must be before to.');
    expect(error).toBeInstanceOf(RequestError);
    expect(error).toMatchObject({ status: 400, code: 'invalid_query', title: 'Bad filter', outcome: null });
    expect(error.message).toBe('from must be before to.');
    expect(isRefusal(error)).toBe(true);
  });

  it('When the admin port refuses (its work cap), then it is no console refusal: the page reads Busy', () => {
    expect(isRefusal(new RequestError(503, 'admin_busy', 'busy'))).toBe(false);
    expect(isRefusal(new Error('boom'))).toBe(false);
  });

  it('When a parameter is given twice, then the refusal is a 400 Bad request naming it', () => {
    expect(thrown(() => param({ query: { q: ['a', 'b'] } }, 'q'))).toMatchObject({
      status: 400,
      code: 'bad_request',
      title: 'Bad request',
      message: 'q is given more than once.',
    });
  });

  it('When an order id in the path is not one, then the refusal is a 400 Bad order id', () => {
    expect(thrown(() => orderIdOf({ params: { orderId: '..' } }))).toMatchObject({
      status: 400,
      code: 'invalid_order_id',
      title: 'Bad order id',
    });
  });
});
