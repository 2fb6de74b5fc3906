package io.zooid;

/**
 * Every native method of {@link Counter}, including its error paths, for
 * {@link CounterCheckJniTest} to run under {@code -Xcheck:jni}. Prints "COUNTER WORKLOAD OK".
 */
public final class CounterJniWorkload {
    private CounterJniWorkload() {}

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String path = "/zooid-java-test/counter-jni/c" + System.nanoTime();
        try (IDGeneratorService service = IDGeneratorService.open(connect)) {
            try (Counter counter = service.counter(path)) {
                counter.init(0);
                long total = 0;
                for (int i = 1; i <= 200; i++) {
                    total += counter.next(1 + i % 4).countIDs();
                }
                if (counter.get() != total) {
                    throw new AssertionError("counter at " + counter.get() + ", handed out " + total);
                }
                expect(CategoryExistsException.class, () -> counter.init(1));
            }
            try (Counter missing = service.counter(path + "-missing")) {
                expect(CategoryNotFoundException.class, missing::get);
                expect(CategoryNotFoundException.class, missing::next);
            }
            expect(IllegalArgumentException.class, () -> service.counter("relative"));
        }
        System.out.println("COUNTER WORKLOAD OK");
    }

    private interface Call {
        void run() throws Exception;
    }

    private static void expect(Class<? extends Throwable> type, Call call) throws Exception {
        try {
            call.run();
        } catch (Throwable t) {
            if (type.isInstance(t)) {
                return;
            }
            throw new AssertionError("expected " + type.getSimpleName() + ", got " + t, t);
        }
        throw new AssertionError("expected " + type.getSimpleName() + ", nothing thrown");
    }
}
