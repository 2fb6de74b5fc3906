package io.zooid;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs a main class of the test classpath in a new JVM and collects what it prints. */
final class ChildJvm {
    final int exitCode;
    final String output;

    private ChildJvm(int exitCode, String output) {
        this.exitCode = exitCode;
        this.output = output;
    }

    static ChildJvm run(List<String> jvmOptions, Class<?> main, String... args) throws IOException, InterruptedException {
        return run(jvmOptions, Collections.<String, String>emptyMap(), main, args);
    }

    /** As {@link #run(List, Class, String...)}, with {@code env} changing the environment (a null value removes). */
    static ChildJvm run(List<String> jvmOptions, Map<String, String> env, Class<?> main, String... args)
            throws IOException, InterruptedException {
        List<String> options = new ArrayList<>(jvmOptions);
        options.add("-cp");
        options.add(System.getProperty("java.class.path"));
        return start(options, env, main, args);
    }

    /** As {@link #run(List, Class, String...)}, with the class path among {@code jvmOptions} ({@code -cp ...}). */
    static ChildJvm runWithOwnClasspath(List<String> jvmOptions, Class<?> main, String... args)
            throws IOException, InterruptedException {
        return start(jvmOptions, Collections.<String, String>emptyMap(), main, args);
    }

    private static ChildJvm start(List<String> jvmOptions, Map<String, String> env, Class<?> main, String... args)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
        command.addAll(jvmOptions);
        command.add(main.getName());
        command.addAll(Arrays.asList(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().remove("LD_LIBRARY_PATH");
        // The tests name the native cache they want; the one of the environment running them is not it.
        builder.environment().remove(NativeCache.ENV);
        for (Map.Entry<String, String> entry : env.entrySet()) {
            if (entry.getValue() == null) {
                builder.environment().remove(entry.getKey());
            } else {
                builder.environment().put(entry.getKey(), entry.getValue());
            }
        }
        Process process = builder.start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Thread reader = new Thread(() -> {
            byte[] buffer = new byte[8192];
            try (InputStream in = process.getInputStream()) {
                int n;
                while ((n = in.read(buffer)) >= 0) {
                    synchronized (out) {
                        out.write(buffer, 0, n);
                    }
                }
            } catch (IOException e) {
                // The process ended.
            }
        });
        reader.start();
        if (!process.waitFor(3, TimeUnit.MINUTES)) {
            process.destroyForcibly();
            process.waitFor();
        }
        reader.join(10_000);
        String text;
        synchronized (out) {
            text = new String(out.toByteArray(), StandardCharsets.UTF_8);
        }
        return new ChildJvm(process.exitValue(), text);
    }

    @Override
    public String toString() {
        return "exit " + exitCode + ", output:\n" + output;
    }
}
