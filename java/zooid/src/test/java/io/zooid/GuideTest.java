package io.zooid;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;

/**
 * Every {@code ```java} block of docs/guides/java.md and README.md compiles, as Java 8 source, against this
 * module's classes: each block is the body of a method that may throw, with {@code io.zooid.*},
 * {@code java.util.*}, {@code TimeUnit} and {@code UTF_8} imported, and the guide's two helpers
 * ({@code moreEventsToPublish()}, {@code publishEvent(long)}) defined. When the API changes, this
 * test names the example to update.
 */
class GuideTest {
    private static final String HEADER =
            "package guide;\n"
                    + "import io.zooid.*;\n"
                    + "import java.util.*;\n"
                    + "import java.util.concurrent.TimeUnit;\n"
                    + "import static java.nio.charset.StandardCharsets.UTF_8;\n"
                    + "public class %s {\n"
                    + "    static boolean moreEventsToPublish() { return false; }\n"
                    + "    static void publishEvent(long id) {}\n"
                    + "    public static void run() throws Exception {\n";
    private static final int HEADER_LINES = 9;

    /** A fenced block: the line of its opening fence and its text. */
    static final class Block {
        final Path doc;
        final int line;
        final String text;

        Block(Path doc, int line, String text) {
            this.doc = doc;
            this.line = line;
            this.text = text;
        }
    }

    static Path guide() {
        Path module = Paths.get(System.getProperty("basedir", System.getProperty("user.dir")));
        return module.resolve("../../docs/guides/java.md").normalize();
    }

    /** This module's classes (named by the POM: the test classpath may be a manifest-only jar). */
    static String classpath() {
        String classes = System.getProperty("zooid.test.classes");
        String path = System.getProperty("java.class.path");
        return classes == null ? path : classes + java.io.File.pathSeparator + path;
    }

    static List<Block> javaBlocks(List<String> lines) {
        List<Block> blocks = new ArrayList<>();
        Integer open = null;
        boolean java = false;
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            String trimmed = line.trim();
            if (trimmed.startsWith("```")) {
                if (open == null) {
                    open = i + 1;
                    String info = trimmed.substring(3).trim();
                    java = info.equals("java") || info.startsWith("java ");
                    text.setLength(0);
                } else {
                    if (java) {
                        blocks.add(new Block(null, open, text.toString()));
                    }
                    open = null;
                }
            } else if (open != null && java) {
                text.append(line).append('\n');
            }
        }
        return blocks;
    }

    @Test
    void everyJavaExampleOfTheGuideCompiles() throws IOException {
        Path guide = guide();
        Path readme = guide.resolve("../../../README.md").normalize();
        List<Block> blocks = new ArrayList<>();
        for (Path doc : Arrays.asList(guide, readme)) {
            for (Block block : javaBlocks(Files.readAllLines(doc, StandardCharsets.UTF_8))) {
                blocks.add(new Block(doc, block.line, block.text));
            }
        }
        assertTrue(blocks.size() >= 5, "the Java guide and README show " + blocks.size() + " Java examples");

        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        assertTrue(compiler != null, "the tests run on a JDK (javax.tools)");
        Path out = Files.createTempDirectory("zooid-guide");
        Path src = Files.createDirectories(out.resolve("src/guide"));
        Path classes = Files.createDirectories(out.resolve("classes"));
        List<String> failures = new ArrayList<>();
        for (Block block : blocks) {
            String name = block.doc.getFileName().toString().replace(".md", "").replace('-', '_')
                    + "Line" + block.line;
            Path file = src.resolve(name + ".java");
            String source = String.format(HEADER, name) + block.text + "    }\n}\n";
            Files.write(file, source.getBytes(StandardCharsets.UTF_8));
            DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
            try (StandardJavaFileManager files =
                    compiler.getStandardFileManager(diagnostics, Locale.ROOT, StandardCharsets.UTF_8)) {
                List<String> options =
                        Arrays.asList(
                                "--release", "8",
                                "-classpath", classpath(),
                                "-d", classes.toString());
                boolean ok =
                        compiler.getTask(null, files, diagnostics, options, null,
                                        files.getJavaFileObjects(file.toFile()))
                                .call();
                for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
                    if (d.getKind() == Diagnostic.Kind.ERROR) {
                        long docLine = block.line + d.getLineNumber() - HEADER_LINES;
                        failures.add(block.doc + ":" + docLine + ": "
                                + d.getMessage(Locale.ROOT));
                    }
                }
                if (!ok && failures.isEmpty()) {
                    failures.add(block.doc + ":" + block.line + ": the example does not compile");
                }
            }
        }
        if (!failures.isEmpty()) {
            fail("examples of the docs do not compile:\n" + String.join("\n", failures));
        }
    }

    @Test
    void blocksAreFound() {
        List<Block> blocks =
                javaBlocks(Arrays.asList("```sh", "x", "```", "```java", "int a = 1;", "```"));
        assertTrue(blocks.size() == 1 && blocks.get(0).line == 4 && blocks.get(0).text.equals("int a = 1;\n"));
    }
}
