package io.zooid;

/** {@link IDGeneratorService#createCategory} found the category already there; an existing pool is never reset. */
public class CategoryExistsException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    public CategoryExistsException(String message, String category) {
        super(ErrorCode.CATEGORY_EXISTS, message, category);
    }
}
