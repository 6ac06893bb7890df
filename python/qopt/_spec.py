"""--input-shapes and --input-values from Python values; text is passed on as it is."""
import numbers


def shapes_text(shapes):
    """{"x": (1, 3, 224, 224)} -> "x:1x3x224x224"."""
    if shapes is None:
        return ""
    if isinstance(shapes, str):
        return shapes
    return ",".join(f"{name}:{'x'.join(str(int(d)) for d in dims)}"
                    for name, dims in shapes.items())


def values_text(values):
    """{"sr": 16000, "shape": [1, 3, 8, 8]} -> "sr=16000,shape=[1,3,8,8]"."""
    if values is None:
        return ""
    if isinstance(values, str):
        return values
    parts = []
    for name, value in values.items():
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            parts.append(f"{name}={_number(value)}")
        else:
            parts.append(f"{name}=[{','.join(_number(v) for v in value)}]")
    return ",".join(parts)


def _number(value):
    if isinstance(value, numbers.Integral):
        return str(int(value))
    return repr(float(value))
