from pt2onnx_cli import main

main()
